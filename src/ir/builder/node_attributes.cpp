// The Builder's node attribute API (PopART's addNodeAttribute, get*NodeAttribute,
// removeNodeAttribute, nodeHasAttribute, getAllNodeAttributeNames): the attributes of the ONNX
// node whose outputs are the given set. The messages are PopART's (its tests compare them).
#include <string>
#include <vector>

#include "ir/builder/builder_impl.hpp"
#include "xtrain/popart_error.hpp"

namespace xtrain {

onnx::NodeProto* BuilderImpl::findNodeWithOutputs(const std::set<TensorId>& outputs, bool exactly) {
  for (onnx::NodeProto& node : *model_.mutable_graph()->mutable_node()) {
    if (exactly && static_cast<size_t>(node.output_size()) != outputs.size()) continue;
    size_t found = 0;
    for (const auto& out : node.output()) found += outputs.count(out);
    if (found == outputs.size()) return &node;
  }
  return nullptr;
}

onnx::NodeProto& BuilderImpl::nodeByOutputs(const std::set<TensorId>& outputs) {
  if (onnx::NodeProto* node = findNodeWithOutputs(outputs, true)) return *node;
  std::string names;
  // PopART's separator (" ,"), as its message has it.
  for (const auto& id : outputs) names += (names.empty() ? "" : " ,") + id;
  throw error("Could not find a node with outputs {}. Must specify all outputs of a node", names);
}

const onnx::TensorProto* BuilderImpl::constantValue(const TensorId& id) const {
  for (const auto& init : model_.graph().initializer()) {
    if (init.name() == id) return &init;
  }
  for (const auto& node : model_.graph().node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1 || node.output(0) != id) continue;
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) return &a.t();
    }
  }
  return nullptr;
}

namespace {

onnx::AttributeProto* findAttribute(onnx::NodeProto& node, const std::string& name) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// A new attribute `name` of `type` on the node of `outputs`.
onnx::AttributeProto& newAttribute(BuilderImpl& impl, const std::string& name,
                                   onnx::AttributeProto::AttributeType type,
                                   const std::set<TensorId>& outputs) {
  onnx::NodeProto& node = impl.nodeByOutputs(outputs);
  if (findAttribute(node, name) != nullptr) throw error("Node already has attribute {}.", name);
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
  impl.nodeChanged();
  return *a;
}

// The attribute `name` of the node of `outputs`, which must be of `type` (`what` names it).
const onnx::AttributeProto& attribute(BuilderImpl& impl, const std::string& name,
                                      onnx::AttributeProto::AttributeType type, const char* what,
                                      const std::set<TensorId>& outputs) {
  const onnx::AttributeProto* a = findAttribute(impl.nodeByOutputs(outputs), name);
  if (a == nullptr) throw error("Node does not have an attribute {}.", name);
  if (a->type() != type) throw error("Attribute {} is not {}.", name, what);
  return *a;
}

}  // namespace

void Builder::addNodeAttribute(const std::string& name, int64_t value,
                               const std::set<TensorId>& ids) {
  newAttribute(*impl_, name, onnx::AttributeProto::INT, ids).set_i(value);
}
void Builder::addNodeAttribute(const std::string& name, int value, const std::set<TensorId>& ids) {
  addNodeAttribute(name, static_cast<int64_t>(value), ids);
}
void Builder::addNodeAttribute(const std::string& name, bool value, const std::set<TensorId>& ids) {
  addNodeAttribute(name, static_cast<int64_t>(value ? 1 : 0), ids);
}
void Builder::addNodeAttribute(const std::string& name, float value,
                               const std::set<TensorId>& ids) {
  newAttribute(*impl_, name, onnx::AttributeProto::FLOAT, ids).set_f(value);
}
void Builder::addNodeAttribute(const std::string& name, const std::string& value,
                               const std::set<TensorId>& ids) {
  newAttribute(*impl_, name, onnx::AttributeProto::STRING, ids).set_s(value);
}
void Builder::addNodeAttribute(const std::string& name, const char* value,
                               const std::set<TensorId>& ids) {
  addNodeAttribute(name, std::string(value), ids);
}
void Builder::addNodeAttribute(const std::string& name, const std::vector<int64_t>& value,
                               const std::set<TensorId>& ids) {
  auto& a = newAttribute(*impl_, name, onnx::AttributeProto::INTS, ids);
  for (int64_t v : value) a.add_ints(v);
}
void Builder::addNodeAttribute(const std::string& name, const std::vector<float>& value,
                               const std::set<TensorId>& ids) {
  auto& a = newAttribute(*impl_, name, onnx::AttributeProto::FLOATS, ids);
  for (float v : value) a.add_floats(v);
}
void Builder::addNodeAttribute(const std::string& name, const std::vector<std::string>& value,
                               const std::set<TensorId>& ids) {
  auto& a = newAttribute(*impl_, name, onnx::AttributeProto::STRINGS, ids);
  for (const auto& v : value) a.add_strings(v);
}

bool Builder::nodeHasAttribute(const std::string& name, const std::set<TensorId>& ids) {
  return findAttribute(impl_->nodeByOutputs(ids), name) != nullptr;
}

int64_t Builder::getInt64NodeAttribute(const std::string& name, const std::set<TensorId>& ids) {
  return attribute(*impl_, name, onnx::AttributeProto::INT, "an integer", ids).i();
}
std::vector<int64_t> Builder::getInt64VectorNodeAttribute(const std::string& name,
                                                          const std::set<TensorId>& ids) {
  const auto& a = attribute(*impl_, name, onnx::AttributeProto::INTS, "an integer vector", ids);
  return {a.ints().begin(), a.ints().end()};
}
float Builder::getFloatNodeAttribute(const std::string& name, const std::set<TensorId>& ids) {
  return attribute(*impl_, name, onnx::AttributeProto::FLOAT, "a float", ids).f();
}
std::vector<float> Builder::getFloatVectorNodeAttribute(const std::string& name,
                                                        const std::set<TensorId>& ids) {
  const auto& a = attribute(*impl_, name, onnx::AttributeProto::FLOATS, "a float vector", ids);
  return {a.floats().begin(), a.floats().end()};
}
std::string Builder::getStringNodeAttribute(const std::string& name,
                                            const std::set<TensorId>& ids) {
  return attribute(*impl_, name, onnx::AttributeProto::STRING, "a string", ids).s();
}
std::vector<std::string> Builder::getStringVectorNodeAttribute(const std::string& name,
                                                               const std::set<TensorId>& ids) {
  const auto& a = attribute(*impl_, name, onnx::AttributeProto::STRINGS, "a string vector", ids);
  return {a.strings().begin(), a.strings().end()};
}
bool Builder::getBoolNodeAttribute(const std::string& name, const std::set<TensorId>& ids) {
  return attribute(*impl_, name, onnx::AttributeProto::INT, "an integer", ids).i() != 0;
}

void Builder::removeNodeAttribute(const std::string& name, const std::set<TensorId>& ids) {
  onnx::NodeProto& node = impl_->nodeByOutputs(ids);
  auto* attrs = node.mutable_attribute();
  for (auto it = attrs->begin(); it != attrs->end(); ++it) {
    if (it->name() == name) {
      attrs->erase(it);
      impl_->nodeChanged();
      return;
    }
  }
  throw error("Cannot remove attribute {} as it does not exist.", name);
}

std::vector<std::string> Builder::getAllNodeAttributeNames(const std::set<TensorId>& ids) {
  std::vector<std::string> names;
  for (const auto& a : impl_->nodeByOutputs(ids).attribute()) names.push_back(a.name());
  return names;
}

void Builder::setEnableConvDithering(const TensorId& nodeOutputName, int64_t value) {
  if (value != 0 && value != 1) {
    throw popart_worded_error("enableConvDithering must be a bool value",
                              xtrain::format("Builder::setEnableConvDithering('{}', {}): "
                                             "enableConvDithering must be a bool value (0 or 1)",
                                             nodeOutputName, value));
  }
  const std::string type = impl_->nodeByOutputs({nodeOutputName}).op_type();
  if (type != "Conv") {
    const std::string popart =
        "Builder::setEnableConvDithering should only be called on convolutions but was given: " +
        type;
    throw popart_worded_error(
        popart, xtrain::format("{} (the node that outputs '{}')", popart, nodeOutputName));
  }
  addNodeAttribute("__enable_conv_dithering", value, {nodeOutputName});  // PopART's name
}

}  // namespace xtrain
