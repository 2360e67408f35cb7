// Reverse-mode automatic differentiation on the IR.
//
// autodiff appends Backward-phase ops to the graph that compute d(loss)/d(t) for every t in `wrt`, using each
// forward op's OpDef::grad. The loss gradient is seeded with `seed` (a tensor of the loss's info, e.g. the loss
// scaling factor) or with ones when seed is empty. Several contributions to one gradient are added with Sum.
// Only floating-point tensors carry gradients. A tensor in `wrt` that does not influence the loss gets no
// entry in the result. Throws xtrain::error when a gradient must flow through an op that has no gradient,
// naming the op and the tensors on each side.
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::ir {

struct AutodiffOptions {
  TensorId seed;  // empty: ones
};

std::map<TensorId, TensorId> autodiff(Graph& graph, const TensorId& loss,
                                      const std::vector<TensorId>& wrt,
                                      const AutodiffOptions& options = {});

}  // namespace xtrain::ir

#pragma GCC visibility pop
