// Element-wise reduction kernels shared by the backends: no communication, no allocation.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>

#include "xtrain/collectives.hpp"
#include "xtrain/datatype.hpp"

namespace xtrain::comm {

// For i in [0, count): reduces srcs[0][i] .. srcs[numSrcs-1][i] (in that order) with `op` and
// writes the result to dsts[0][i] .. dsts[numDsts-1][i]. Mean divides by numSrcs. Works in
// cache-sized chunks, so a destination may alias a source (each chunk is read completely before it
// is written). FLOAT16 reduces in float; integers wrap on Add/Mul/SquareAdd. `op` must not be
// Local; requires isReducible(type, op).
//
// FLOAT Add and Mean run vectorised (AVX-512 or AVX2, chosen at run time by the CPU), with the
// same operations in the same order per element as the scalar loop: bit-identical results on
// every kernel. `streaming` asks for non-temporal stores (large rounds whose destinations this
// core will not read again soon: they skip the read-for-ownership and the cache); it is a hint,
// ignored where it does not apply.
void reduceInto(DataType type, CollectiveOperator op, const void* const* srcs, size_t numSrcs,
                void* const* dsts, size_t numDsts, size_t count, bool streaming = false);

// The kernel family reduceInto uses (process-wide). setReduceKernel (for tests and benchmarks)
// selects a kernel the CPU supports and returns the previous one; it must not race a reduction.
enum class ReduceKernel { Scalar = 0, Avx2 = 1, Avx512 = 2 };
ReduceKernel reduceKernel();
ReduceKernel setReduceKernel(ReduceKernel kernel);

}  // namespace xtrain::comm

#pragma GCC visibility pop
