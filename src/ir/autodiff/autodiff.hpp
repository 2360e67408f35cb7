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

#include <functional>
#include <map>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::ir {

// One gradient contribution autodiff made: the gradient of input `input` of forward op
// `forwardOp` (the output of the ops its OpDef::grad emitted), or, with forwardOp -1, the Sum of
// several contributions to the gradient of one tensor. Automatic loss scaling chooses the
// gradients it tracks from these (session/update_control.hpp).
struct GradientContribution {
  OpId forwardOp = -1;
  size_t input = 0;
  TensorId gradient;
};

struct AutodiffOptions {
  TensorId seed;  // empty: ones
  // When set, every contribution is appended, in the order autodiff made them.
  std::vector<GradientContribution>* contributions = nullptr;
  // When set, called with each forward op and which of its inputs need a gradient, before the
  // op's gradient is made; it may throw to refuse that gradient.
  std::function<void(const Op&, const std::vector<bool>&)> beforeGradient;
};

std::map<TensorId, TensorId> autodiff(Graph& graph, const TensorId& loss,
                                      const std::vector<TensorId>& wrt,
                                      const AutodiffOptions& options = {});

}  // namespace xtrain::ir

#pragma GCC visibility pop
