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
void reduceInto(DataType type, CollectiveOperator op, const void* const* srcs, size_t numSrcs,
                void* const* dsts, size_t numDsts, size_t count);

}  // namespace xtrain::comm

#pragma GCC visibility pop
