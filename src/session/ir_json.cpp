#include "session/ir_json.hpp"

#include "common/json_writer.hpp"
#include "ir/placement/placement.hpp"
#include "xtrain/format.hpp"

namespace xtrain::session {

namespace {

void writeTensors(json::Writer& w, const ir::Graph& graph, const std::vector<TensorId>& ids) {
  w.beginArray();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty()) continue;
    const TensorInfo& info = graph.tensor(ids[i]).info;
    w.beginObject()
        .field("name", ids[i])
        .field("shape", format("{}", info.shape()))
        .field("type", std::string(dataTypeName(info.dataType())))
        .field("index", std::to_string(i))
        .endObject();
  }
  w.endArray();
}

std::string attributeText(const AttrValue& v) {
  return std::visit([](const auto& x) { return format("{}", x); }, v);
}

}  // namespace

std::string serializeIrJson(const ir::Graph& graph) {
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
  w.endArray().endObject();
  return w.str();
}

}  // namespace xtrain::session
