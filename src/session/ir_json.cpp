#include "session/ir_json.hpp"

#include "common/json_writer.hpp"
#include "ir/placement/placement.hpp"
#include "xtrain/format.hpp"

namespace xtrain::session {

namespace {

void writeTensor(json::Writer& w, const ir::Graph& graph, const TensorId& id, size_t index) {
  const TensorInfo& info = graph.tensor(id).info;
  w.beginObject()
      .field("name", id)
      .field("shape", format("{}", info.shape()))
      .field("type", std::string(dataTypeName(info.dataType())))
      .field("index", std::to_string(index))
      .endObject();
}

void writeTensors(json::Writer& w, const ir::Graph& graph, const std::vector<TensorId>& ids) {
  w.beginArray();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].empty()) writeTensor(w, graph, ids[i], i);
  }
  w.endArray();
}

std::string attributeText(const AttrValue& v) {
  return std::visit([](const auto& x) { return format("{}", x); }, v);
}

// PopART's Stash and RestoreInplace ops of a pipelined session (see the header).
void writeStashes(json::Writer& w, const ir::Graph& graph, const PipelinePlan& plan) {
  auto op = [&](const char* type, const TensorId& tensor, const PipelineStash& s, int64_t slot,
                bool restore) {
    const TensorInfo& info = graph.tensor(tensor).info;
    std::vector<int64_t> ringShape{s.depth};
    ringShape.insert(ringShape.end(), info.shape().begin(), info.shape().end());
    auto ring = [&] {
      w.beginObject()
          .field("name", tensor + "_stash")
          .field("shape", format("{}", ringShape))
          .field("type", std::string(dataTypeName(info.dataType())))
          .field("index", std::to_string(restore ? 1 : 0))
          .endObject();
    };
    w.beginObject()
        .field("type", type)
        .field("name", std::string(type) + "/" + tensor)
        .field("domain", ir::kGraphcoreDomain)
        .field("version", "1");
    // PopART's RestoreInplace reads the tensor and the stash, and writes the tensor.
    w.key("inputs").beginArray();
    writeTensor(w, graph, tensor, 0);
    if (restore) ring();
    w.endArray();
    w.key("outputs");
    if (restore) {
      writeTensors(w, graph, {tensor});
    } else {
      w.beginArray();
      ring();
      w.endArray();
    }
    w.key("attributes")
        .beginObject()
        .field("stashSize", std::to_string(s.depth))
        .field(ir::kVirtualGraphAttribute, std::to_string(s.virtualGraph))
        .field(ir::kPipelineStageAttribute, std::to_string(slot))
        .endObject()
        .endObject();
  };
  for (const PipelineStash& s : plan.stashes) {
    if (s.depth <= 2) continue;
    op("Stash", s.tensor, s, s.writer, false);
  }
  for (size_t slot = 0; slot < plan.restoreBefore.size(); ++slot) {
    for (size_t k : plan.restoreBefore[slot]) {
      const PipelineStash& s = plan.stashes[k];
      if (s.depth > 2) op("RestoreInplace", s.tensor, s, static_cast<int64_t>(slot), true);
    }
  }
}

}  // namespace

std::string serializeIrJson(const ir::Graph& graph, const PipelinePlan* pipeline) {
  json::StringWriter w;
  w.beginObject().key("maingraph").beginArray(json::Writer::Layout::LinePerMember);
  for (OpId id : graph.schedule()) {
    const ir::Op& op = graph.op(id);
    w.beginObject()
        .field("type", op.type)
        .field("name", op.name)
        .field("domain", op.domain)
        .field("version", std::to_string(op.opset));
    w.key("inputs");
    writeTensors(w, graph, op.inputs);
    w.key("outputs");
    writeTensors(w, graph, op.outputs);
    w.key("attributes").beginObject();
    for (const auto& [name, value] : op.attrs.all()) w.field(name, attributeText(value));
    if (op.placement.virtualGraph != ir::Placement::kNone) {
      w.field(ir::kVirtualGraphAttribute, std::to_string(op.placement.virtualGraph));
    }
    if (op.placement.pipelineStage != ir::Placement::kNone) {
      w.field(ir::kPipelineStageAttribute, std::to_string(op.placement.pipelineStage));
    }
    if (op.placement.executionPhase != ir::Placement::kNone) {
      w.field(ir::kExecutionPhaseAttribute, std::to_string(op.placement.executionPhase));
    }
    w.endObject().endObject();
  }
  if (pipeline != nullptr && pipeline->enabled()) writeStashes(w, graph, *pipeline);
  w.endArray().endObject();
  return w.str();
}

}  // namespace xtrain::session
