#include "session/layout_plan.hpp"

#include <cstdlib>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {

bool channelsLastFromEnvironment() {
  return readEnvChoice("XTRAIN_LAYOUT", {"plain", "channels_last"}).value_or("channels_last") !=
         "plain";
}

bool layoutAwareSlot(const ir::Op& op, size_t slot, bool output) {
  const bool onnx = op.domain == ir::kOnnxDomain;
  const bool internal = op.domain == ir::kXtrainDomain;
  if (onnx && (op.type == "Conv" || op.type == "BatchNormalization")) return slot == 0;  // X, Y
  if (internal && op.type == "ConvGradInput") return slot == 0;                          // gY, dX
  if (internal && op.type == "ConvGradWeight") return !output && slot <= 1;              // gY, X
  if (internal && op.type == "BatchNormGrad") return output ? slot == 0 : slot <= 1;  // dY, X; dX
  return false;
}

bool layoutAgnosticElementwise(const ir::Graph& graph, const ir::Op& op) {
  const bool onnx = op.domain == ir::kOnnxDomain;
  const bool elementwise = (onnx && (op.type == "Relu" || op.type == "Add" || op.type == "Sum")) ||
                           (op.domain == ir::kXtrainDomain && op.type == "ReluGrad");
  if (!elementwise || op.outputs.size() != 1 || !op.hasOutput(0)) return false;
  const Shape& shape = graph.tensor(op.outputs[0]).info.shape();
  for (const TensorId& in : op.inputs) {
    if (in.empty() || graph.tensor(in).info.shape() != shape) return false;
  }
  return true;
}

namespace {

// Union-find over tensor indices: the tensors of one elementwise op must share a layout.
class Groups {
 public:
  explicit Groups(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t{0}); }
  size_t find(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void join(size_t a, size_t b) { parent_[find(a)] = find(b); }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

std::set<TensorId> channelsLastTensors(const ir::Graph& graph, const std::set<TensorId>& hostRead) {
  std::map<TensorId, size_t> index;
  std::vector<TensorId> ids;
  std::vector<bool> eligible;
  for (const auto& [id, t] : graph.tensors()) {
    index[id] = ids.size();
    ids.push_back(id);
    eligible.push_back(t->kind == ir::TensorKind::Activation && t->info.rank() == 4 &&
                       t->info.dataType() == DataType::FLOAT && hostRead.count(id) == 0);
  }
  for (const TensorId& id : graph.outputs()) {
    if (auto it = index.find(id); it != index.end()) eligible[it->second] = false;
  }
  Groups groups(ids.size());
  for (const auto& [opId, op] : graph.ops()) {
    // A recomputation clone's outputs share the original's layouts: the same kernel on the same
    // layouts computes the same bits.
    if (op->recomputes >= 0) {
      const ir::Op& original = graph.op(op->recomputes);
      for (size_t i = 0; i < op->outputs.size() && i < original.outputs.size(); ++i) {
        if (op->hasOutput(i) && original.hasOutput(i)) {
          groups.join(index.at(op->outputs[i]), index.at(original.outputs[i]));
        }
      }
    }
    if (layoutAgnosticElementwise(graph, *op)) {
      const size_t out = index.at(op->outputs[0]);
      for (const TensorId& in : op->inputs) groups.join(index.at(in), out);
      continue;
    }
    for (size_t i = 0; i < op->inputs.size(); ++i) {
      if (op->hasInput(i) && !layoutAwareSlot(*op, i, false)) {
        eligible[index.at(op->inputs[i])] = false;
      }
    }
    for (size_t i = 0; i < op->outputs.size(); ++i) {
      if (op->hasOutput(i) && !layoutAwareSlot(*op, i, true)) {
        eligible[index.at(op->outputs[i])] = false;
      }
    }
  }
  // A group is channels-last only when every member may be.
  std::vector<bool> groupEligible(ids.size(), true);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!eligible[i]) groupEligible[groups.find(i)] = false;
  }
  std::set<TensorId> result;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (eligible[i] && groupEligible[groups.find(i)]) result.insert(ids[i]);
  }
  return result;
}

}  // namespace xtrain::session
