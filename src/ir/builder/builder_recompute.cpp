// Builder's recomputation marks (xtrain/builder.hpp, "Recomputation"): the node attribute
// __recompute_output_in_backward_pass, as PopART's Builder writes it; ir/recompute reads it.
#include "ir/builder/builder_impl.hpp"
#include "ir/recompute/recompute.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {

namespace {

void mark(BuilderImpl& impl, const std::set<TensorId>& names, RecomputeType value,
          const char* method) {
  if (value == RecomputeType::Recomputed) {
    throw error(
        "Builder::{}: RecomputeType Recomputed marks the clones recomputation makes; a model's "
        "node takes Undefined, Checkpoint or Recompute",
        method);
  }
  onnx::NodeProto& node = impl.placementNode(names, std::string("Builder::") + method);
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() != ir::kRecomputeAttribute) continue;
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(static_cast<int64_t>(value));
    impl.nodeChanged();
    return;
  }
  setIntAttr(node, ir::kRecomputeAttribute, static_cast<int64_t>(value));
  impl.nodeChanged();
}

}  // namespace

void Builder::recomputeOutputInBackwardPass(const TensorId& nodeOutputName, RecomputeType value) {
  recomputeOutputInBackwardPass(std::set<TensorId>{nodeOutputName}, value);
}

void Builder::recomputeOutputInBackwardPass(const std::set<TensorId>& nodeOutputNames,
                                            RecomputeType value) {
  mark(*impl_, nodeOutputNames, value, "recomputeOutputInBackwardPass");
}

bool Builder::getRecomputeOutputInBackwardPass(const TensorId& nodeOutputName) {
  return getRecomputeOutputInBackwardPass(std::set<TensorId>{nodeOutputName});
}

bool Builder::getRecomputeOutputInBackwardPass(const std::set<TensorId>& nodeOutputNames) {
  const onnx::NodeProto& node =
      impl_->placementNode(nodeOutputNames, "Builder::getRecomputeOutputInBackwardPass");
  for (const auto& a : node.attribute()) {
    if (a.name() == ir::kRecomputeAttribute && a.type() == onnx::AttributeProto::INT) {
      return a.i() == static_cast<int64_t>(RecomputeType::Recompute);
    }
  }
  return false;
}

void Builder::recomputeOutput(const TensorId& nodeOutputName, RecomputeType value) {
  mark(*impl_, {nodeOutputName}, value, "recomputeOutput");
}

std::vector<TensorId> Builder::checkpointOutput(const std::vector<TensorId>& nodeOutputNames) {
  std::vector<TensorId> outputs;
  for (const auto& id : nodeOutputNames) {
    if (!impl_->hasTensor(id)) {
      throw error("Builder::checkpointOutput: '{}' is not a tensor of this model", id);
    }
    const TensorId out = impl_->emit1("Identity", {id}, "Checkpoint");
    mark(*impl_, {out}, RecomputeType::Checkpoint, "checkpointOutput");
    outputs.push_back(out);
  }
  return outputs;
}

}  // namespace xtrain
