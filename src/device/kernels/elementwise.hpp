// Elementwise loops with numpy broadcasting over raw element storage (BOOL is one byte, 0/1),
// with fast paths for equal shapes, scalar operands and a row (a bias) repeated along the leading
// dimensions. Large loops are split over the kernel threads (forChunks).
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"
#include "device/kernels/parallel_elements.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device {

template <typename T>
const T* elems(const HostTensor& t) {
  return reinterpret_cast<const T*>(t.raw());
}
template <typename T>
T* elems(HostTensor& t) {
  return reinterpret_cast<T*>(t.raw());
}

// Calls f(begin, end) over [0, n) in chunks of `grain` items (elements, or rows of a repeated-row
// loop), split over the kernel threads when there is more than one chunk (parallel_elements.hpp:
// the chunks never depend on the thread count). f must not throw.
template <typename F>
void forChunks(int64_t n, F&& f, int64_t grain = kParallelChunk) {
  forEachChunk(
      n, [&f](int64_t, int64_t begin, int64_t end) { f(begin, end); }, grain);
}

// Rows of `row` elements per chunk: about kParallelChunk elements.
inline int64_t rowGrain(int64_t row) {
  return std::max<int64_t>(1, kParallelChunk / std::max<int64_t>(1, row));
}

// y[i] = f(x[i]) for FLOAT input 0 and output 0 of one size. f is taken by value: a local copy, so
// that its parameters stay in registers in the loop.
template <typename F>
void mapFloat(const KernelIO& io, F f) {
  const float* __restrict x = io.in(0).data<float>();
  float* __restrict y = io.out(0).data<float>();
  forChunks(io.out(0).nelms(), [x, y, f](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  });
}

// gx[i] = f(gy[i], z[i]) for a grad op (gy, z) -> gx, FLOAT, all of one size.
template <typename F>
void mapFloatGrad(const KernelIO& io, F f) {
  const float* __restrict gy = io.in(0).data<float>();
  const float* __restrict z = io.in(1).data<float>();
  float* __restrict gx = io.out(0).data<float>();
  forChunks(io.out(0).nelms(), [gy, z, gx, f](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) gx[i] = f(gy[i], z[i]);
  });
}

// The length of the row `small` is when it broadcasts to `big` as one contiguous block repeated
// along big's leading dimensions (a bias [C] or [1, C] against [N, C] or [B, S, C]), else 0.
inline int64_t repeatedRowLength(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return 0;
  int64_t row = 1;
  size_t k = 0;  // trailing dims of big covered by small's row
  // From the right: equal dims form the row; then only 1s (or missing dims) may remain in small.
  while (k < small.size() && small[small.size() - 1 - k] == big[big.size() - 1 - k]) {
    row *= small[small.size() - 1 - k];
    ++k;
  }
  for (size_t j = k; j < small.size(); ++j) {
    if (small[small.size() - 1 - j] != 1) return 0;
  }
  return row;
}

// Throws when the integer divisor b has a zero (Div and Mod check before dividing).
template <typename T>
void requireNoZeroDivisor(const std::string& op, const HostTensor& b) {
  const T* pb = elems<T>(b);
  const int64_t n = b.nelms();
  int64_t zeros = 0;  // a count: GCC vectorises an int sum, not a bool or
  for (int64_t i = 0; i < n; ++i) zeros += pb[i] == 0 ? 1 : 0;
  if (zeros != 0)
    throw error("{}: integer division by zero (the divisor, input 1, has a zero)", op);
}

// y[i] = op(a[i'], b[i'']) where a and b broadcast to y. y may alias a (same shape) for in-place
// accumulation.
template <typename TA, typename TB, typename TY, typename Op>
void broadcastBinary(const HostTensor& a, const HostTensor& b, HostTensor& y, Op op) {
  const TA* pa = elems<TA>(a);
  const TB* pb = elems<TB>(b);
  TY* py = elems<TY>(y);
  const int64_t n = y.nelms();
  if (a.shape() == y.shape() && b.shape() == y.shape()) {
    forChunks(n, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) py[i] = op(pa[i], pb[i]);
    });
  } else if (a.shape() == y.shape() && b.nelms() == 1) {
    const TB v = pb[0];
    forChunks(n, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) py[i] = op(pa[i], v);
    });
  } else if (b.shape() == y.shape() && a.nelms() == 1) {
    const TA v = pa[0];
    forChunks(n, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) py[i] = op(v, pb[i]);
    });
  } else if (const int64_t row = repeatedRowLength(b.shape(), y.shape());
             a.shape() == y.shape() && row > 1) {
    forChunks(
        n / row,
        [=](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            for (int64_t j = 0; j < row; ++j) py[r * row + j] = op(pa[r * row + j], pb[j]);
          }
        },
        rowGrain(row));
  } else if (const int64_t rowA = repeatedRowLength(a.shape(), y.shape());
             b.shape() == y.shape() && rowA > 1) {
    forChunks(
        n / rowA,
        [=](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            for (int64_t j = 0; j < rowA; ++j) py[r * rowA + j] = op(pa[j], pb[r * rowA + j]);
          }
        },
        rowGrain(rowA));
  } else {
    forEachBroadcast2(y.shape(), broadcastStrides(a.shape(), y.shape()),
                      broadcastStrides(b.shape(), y.shape()),
                      [&](int64_t o, int64_t ia, int64_t ib) { py[o] = op(pa[ia], pb[ib]); });
  }
}

// Calls f(outIndex, offsetA, offsetB, offsetC) for every output element, in row-major order.
template <typename F>
void forEachBroadcast3(const Shape& out, const std::vector<int64_t>& sa,
                       const std::vector<int64_t>& sb, const std::vector<int64_t>& sc, F&& f) {
  const size_t rank = out.size();
  int64_t n = 1;
  for (auto d : out) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    f(0, 0, 0, 0);
    return;
  }
  const int64_t inner = out[rank - 1];
  const int64_t ia = sa[rank - 1], ib = sb[rank - 1], ic = sc[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t offA = 0, offB = 0, offC = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) f(base + j, offA + j * ia, offB + j * ib, offC + j * ic);
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      ++idx[u];
      offA += sa[u];
      offB += sb[u];
      offC += sc[u];
      if (idx[u] < out[u]) break;
      offA -= sa[u] * out[u];
      offB -= sb[u] * out[u];
      offC -= sc[u] * out[u];
      idx[u] = 0;
    }
  }
}

}  // namespace xtrain::device

#pragma GCC visibility pop
