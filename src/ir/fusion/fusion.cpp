#include "ir/fusion/fusion.hpp"

#include <vector>

#include "ir/fusion/gelu_fusion.hpp"
#include "ir/fusion/silu_fusion.hpp"
#include "ir/fusion/transpose_matmul_fusion.hpp"

namespace xtrain::ir {

FusionReport fuseGraph(Graph& graph, const std::set<TensorId>& keep) {
  FusionReport report;
  std::vector<OpId> ids;
  for (const auto& [id, op] : graph.ops()) {
    if (op->type == "Mul" && op->domain == kOnnxDomain) ids.push_back(id);
  }
  // A fused subgraph removes Muls later in the list: each is looked up again before use.
  for (OpId id : ids) {
    if (!graph.ops().count(id)) continue;
    if (fusion::fuseGelu(graph, keep, id)) {
      ++report.gelu;
    } else if (fusion::fuseSilu(graph, keep, id)) {
      ++report.silu;
    }
  }
  std::vector<OpId> matmuls;
  for (const auto& [id, op] : graph.ops()) {
    if (op->type == "MatMul" && op->domain == kOnnxDomain) matmuls.push_back(id);
  }
  for (OpId id : matmuls) {
    if (fusion::fuseTransposeMatMul(graph, keep, id)) ++report.matmul;
  }
  return report;
}

}  // namespace xtrain::ir
