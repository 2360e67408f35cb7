// GELU patterns of the fusion pass (src/ir/fusion/fusion.hpp): torch.onnx's exports of
//   tanh-GELU  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (x^3 as x*x*x or Pow(x, 3))
//   erf-GELU   0.5 x (1 + erf(x / sqrt(2)))                        (or x * (1/sqrt(2)))
// with the products in any order and association (0.5 * (x * s), (x * 0.5) * s, ...) and Add's
// operands either way round, become one ai.xtrain Gelu (approximate "tanh" or "none").
#pragma once
#pragma GCC visibility push(default)

#include <optional>
#include <set>

#include "ir/graph.hpp"

namespace xtrain::ir::fusion {

// When the ai.onnx Mul `root` is the last op of a GELU subgraph that may be fused, replaces the
// subgraph by one Gelu op and returns true.
bool fuseGelu(Graph& graph, const std::set<TensorId>& keep, OpId root);

}  // namespace xtrain::ir::fusion

#pragma GCC visibility pop
