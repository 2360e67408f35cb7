// Numpy broadcasting for kernels: maps each element of the output to an element of an input.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <vector>

#include "xtrain/names.hpp"

namespace xtrain::device {

// Strides (in elements) of `in` aligned to the output's rank, 0 along broadcast dimensions.
inline std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = out.size() - 1 - k;
    strides[o] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return strides;
}

// Calls f(outIndex, offsetA, offsetB) for every output element, in row-major order.
template <typename F>
void forEachBroadcast2(const Shape& out, const std::vector<int64_t>& sa,
                       const std::vector<int64_t>& sb, F&& f) {
  const size_t rank = out.size();
  int64_t n = 1;
  for (auto d : out) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    f(0, 0, 0);
    return;
  }
  // Iterate the innermost dimension in a tight loop.
  const int64_t inner = out[rank - 1];
  const int64_t ia = sa[rank - 1];
  const int64_t ib = sb[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t offA = 0, offB = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) f(base + j, offA + j * ia, offB + j * ib);
    // advance the outer index
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      ++idx[u];
      offA += sa[u];
      offB += sb[u];
      if (idx[u] < out[u]) break;
      offA -= sa[u] * out[u];
      offB -= sb[u] * out[u];
      idx[u] = 0;
    }
  }
}

}  // namespace xtrain::device

#pragma GCC visibility pop
