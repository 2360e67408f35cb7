#include "ir/fusion/subgraph_match.hpp"

#include <algorithm>
#include <cmath>

#include "common/check.hpp"

namespace xtrain::ir::fusion {

const Op* SubgraphMatch::producer(const TensorId& t, const char* type) {
  if (t.empty() || !graph_->hasTensor(t)) return nullptr;
  const OpId p = graph_->tensor(t).producer;
  if (p < 0) return nullptr;
  const Op& op = graph_->op(p);
  if (op.type != type || op.domain != kOnnxDomain || op.outputs.size() != 1) return nullptr;
  ops_.insert(p);
  return &op;
}

std::optional<double> SubgraphMatch::scalar(const TensorId& t) const {
  if (t.empty() || !graph_->hasTensor(t)) return std::nullopt;
  const Tensor& tensor = graph_->tensor(t);
  if (tensor.kind != TensorKind::Const || !tensor.value || tensor.value->nelms() != 1) {
    return std::nullopt;
  }
  const HostTensor& v = *tensor.value;
  switch (v.dataType()) {
    case DataType::FLOAT: return v.data<float>()[0];
    case DataType::DOUBLE: return v.data<double>()[0];
    case DataType::INT32: return v.data<int32_t>()[0];
    case DataType::INT64: return static_cast<double>(v.data<int64_t>()[0]);
    default: return std::nullopt;
  }
}

bool SubgraphMatch::singleReader(const TensorId& t) const {
  const auto& readers = graph_->tensor(t).consumers;
  if (readers.empty()) return false;
  return std::all_of(readers.begin(), readers.end(), [&](OpId r) { return r == readers.front(); });
}

void SubgraphMatch::productLeaves(const TensorId& t, std::vector<TensorId>& leaves) {
  if (graph_->hasTensor(t) && singleReader(t) && !keep_->count(t)) {
    const OpId p = graph_->tensor(t).producer;
    if (p >= 0) {
      const Op& op = graph_->op(p);
      if (op.type == "Mul" && op.domain == kOnnxDomain && op.inputs.size() == 2) {
        ops_.insert(p);
        productLeaves(op.inputs[0], leaves);
        productLeaves(op.inputs[1], leaves);
        return;
      }
    }
  }
  leaves.push_back(t);
}

double SubgraphMatch::constantFactor(const std::vector<TensorId>& leaves,
                                     std::vector<TensorId>& others) const {
  double factor = 1.0;
  for (const auto& t : leaves) {
    if (auto v = scalar(t)) {
      factor *= *v;
    } else {
      others.push_back(t);
    }
  }
  return factor;
}

bool SubgraphMatch::selfContained(const TensorInfo& info) const {
  const auto& graphOutputs = graph_->outputs();
  for (OpId id : ops_) {
    const Op& op = graph_->op(id);
    for (const auto& out : op.outputs) {
      if (out.empty()) continue;
      if (graph_->tensor(out).info != info) return false;
      if (id == root_) continue;
      if (keep_->count(out) ||
          std::find(graphOutputs.begin(), graphOutputs.end(), out) != graphOutputs.end()) {
        return false;
      }
      for (OpId reader : graph_->tensor(out).consumers) {
        if (!ops_.count(reader)) return false;
      }
    }
  }
  return true;
}

bool near(double a, double b, double rel) {
  return std::fabs(a - b) <= rel * std::fabs(b);
}

void replaceSubgraph(Graph& graph, const std::set<OpId>& ops, OpId root, OpSpec replacement) {
  const TensorId result = graph.op(root).outputs.at(0);
  // The fused op runs where the op whose result it gives ran.
  replacement.placement = graph.op(root).placement;
  replacement.recomputeType = graph.op(root).recomputeType;
  std::set<TensorId> inputs;
  for (OpId id : ops) {
    for (const auto& in : graph.op(id).inputs) inputs.insert(in);
  }
  // The result's readers are set aside while its producer goes, then given to the replacement.
  std::vector<OpId> readers = std::move(graph.tensor(result).consumers);
  graph.tensor(result).consumers.clear();
  std::set<OpId> left = ops;
  while (!left.empty()) {
    // An op whose outputs nobody reads any more: the root first, then inwards.
    auto it = std::find_if(left.begin(), left.end(), [&](OpId id) {
      const Op& op = graph.op(id);
      return std::all_of(op.outputs.begin(), op.outputs.end(), [&](const TensorId& out) {
        return out.empty() || graph.tensor(out).consumers.empty();
      });
    });
    XT_CHECK(it != left.end(), "fusion: the subgraph of op {} does not come apart", root);
    graph.removeOp(*it);
    left.erase(it);
  }
  replacement.outputs = {result};
  replacement.numOutputs = 1;
  graph.addOp(std::move(replacement));
  graph.tensor(result).consumers = std::move(readers);

  const auto& graphInputs = graph.inputs();
  const auto& graphOutputs = graph.outputs();
  for (const auto& in : inputs) {
    if (in.empty() || !graph.hasTensor(in)) continue;
    const Tensor& t = graph.tensor(in);
    const bool listed =
        std::find(graphInputs.begin(), graphInputs.end(), in) != graphInputs.end() ||
        std::find(graphOutputs.begin(), graphOutputs.end(), in) != graphOutputs.end();
    if (t.kind == TensorKind::Const && t.producer < 0 && t.consumers.empty() && !listed) {
      graph.removeTensor(in);
    }
  }
}

}  // namespace xtrain::ir::fusion
