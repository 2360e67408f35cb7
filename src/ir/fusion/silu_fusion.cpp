#include "ir/fusion/silu_fusion.hpp"

#include <string>

#include "ir/fusion/subgraph_match.hpp"

namespace xtrain::ir::fusion {

bool fuseSilu(Graph& graph, const std::set<TensorId>& keep, OpId root) {
  const Op& mul = graph.op(root);
  if (mul.type != "Mul" || mul.domain != kOnnxDomain || mul.inputs.size() != 2) return false;
  for (size_t xi : {size_t{0}, size_t{1}}) {
    const TensorId& x = mul.inputs[xi];
    const TensorInfo& info = graph.tensor(x).info;
    if (info.dataType() != DataType::FLOAT) continue;
    SubgraphMatch m(graph, keep, root);
    const Op* sigmoid = m.producer(mul.inputs[1 - xi], "Sigmoid");
    if (sigmoid == nullptr || sigmoid->inputs.size() != 1 || sigmoid->inputs[0] != x) continue;
    if (!m.selfContained(info)) continue;
    OpSpec swish;
    swish.type = "Swish";
    swish.domain = kGraphcoreDomain;
    swish.inputs = {x};
    swish.name = mul.name.empty() ? std::string("silu") : mul.name + "/silu";
    swish.phase = mul.phase;
    replaceSubgraph(graph, m.ops(), root, std::move(swish));
    return true;
  }
  return false;
}

}  // namespace xtrain::ir::fusion
