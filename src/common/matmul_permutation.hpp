// The internal MatMulT op's operand and result permutations, shared by its shape inference and
// gradient (src/ir/ops/matmul_t_ops.cpp), its kernel (src/device/kernels/matmul_kernels.cpp) and
// the fusion pass that folds Transposes into it (src/ir/fusion/transpose_matmul_fusion.cpp); in
// src/common, which the ops and the kernels may both include (docs/architecture.md).
//
// A permutation `perm` of a tensor T gives the tensor T' = Transpose(T, perm): T'.dim[i] =
// T.dim[perm[i]], as ONNX Transpose defines it. MatMulT's permA and permB permute its operands
// before the product (before transA/transB), permY permutes the product into the output.
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "common/attributes.hpp"
#include "xtrain/names.hpp"

namespace xtrain {

using Permutation = std::vector<int64_t>;

inline Permutation identityPermutation(size_t rank) {
  Permutation p(rank);
  std::iota(p.begin(), p.end(), int64_t{0});
  return p;
}

// true when p holds each of 0 .. rank-1 once.
inline bool isPermutation(const Permutation& p, size_t rank) {
  if (p.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t d : p) {
    if (d < 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)]) return false;
    seen[static_cast<size_t>(d)] = true;
  }
  return true;
}

inline bool isIdentity(const Permutation& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

inline Permutation inversePermutation(const Permutation& p) {
  Permutation inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return inv;
}

// Transpose(Transpose(T, first), second) = Transpose(T, composed(first, second)).
inline Permutation composed(const Permutation& first, const Permutation& second) {
  Permutation c(second.size());
  for (size_t i = 0; i < second.size(); ++i) c[i] = first[static_cast<size_t>(second[i])];
  return c;
}

// The permutation that swaps the last two of `rank` dimensions (rank >= 2).
inline Permutation lastTwoSwapped(size_t rank) {
  Permutation p = identityPermutation(rank);
  std::swap(p[rank - 2], p[rank - 1]);
  return p;
}

// The shape of Transpose(T, perm) for T of shape s.
inline Shape permutedShape(const Shape& s, const Permutation& perm) {
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = s[static_cast<size_t>(perm[i])];
  return out;
}

// MatMulT's permutation attribute `name` ("permA", "permB", "permY") for a tensor of `rank`
// dimensions: the identity when absent.
inline Permutation matMulTPermutation(const Attributes& attrs, const char* name, size_t rank) {
  return attrs.has(name) ? attrs.getInts(name) : identityPermutation(rank);
}

inline bool hasMatMulTPermutation(const Attributes& attrs) {
  return attrs.has("permA") || attrs.has("permB") || attrs.has("permY");
}

}  // namespace xtrain

#pragma GCC visibility pop
