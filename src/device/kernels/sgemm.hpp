// A plain single-precision GEMM on oneDNN, for benchmarks and tools: C = A x B with A [M, K], B [K,
// N] and C [M, N], all row-major and dense. Not used by the kernels (they precompute oneDNN
// primitives instead).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>

namespace xtrain::device {

// Throws xtrain::error when oneDNN reports a failure (e.g. a negative dimension).
void sgemm(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K);

}  // namespace xtrain::device

#pragma GCC visibility pop
