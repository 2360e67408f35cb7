// SiLU pattern of the fusion pass (src/ir/fusion/fusion.hpp): torch.onnx's export of nn.SiLU (and
// of x * torch.sigmoid(x)), Mul(x, Sigmoid(x)) with the operands either way round, becomes one
// ai.graphcore Swish (PopART's name for it), whose gradient is the one-pass SwishGrad.
//
// Why: EfficientNet's and the mobile nets' activations are SiLU; unfused, each costs a Sigmoid and
// a Mul forward and, backward, the chain rule through both (a Mul, a SigmoidGrad and a Sum), with
// the sigmoid kept alive for the backward pass.
#pragma once
#pragma GCC visibility push(default)

#include <set>

#include "ir/graph.hpp"

namespace xtrain::ir::fusion {

// When the ai.onnx Mul `root` multiplies a tensor by its own Sigmoid and that Sigmoid's result is
// read by nothing else (nor kept), replaces both by one Swish op and returns true.
bool fuseSilu(Graph& graph, const std::set<TensorId>& keep, OpId root);

}  // namespace xtrain::ir::fusion

#pragma GCC visibility pop
