// Builder's placement annotations and attribute scopes (xtrain/builder.hpp, "Placement";
// docs/model-parallelism.md): node attributes as PopART's Builder writes them.
#include <typeinfo>

#include "ir/builder/builder_impl.hpp"
#include "ir/placement/placement.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {

namespace {

std::string describeNames(const std::set<TensorId>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return "{" + s + "}";
}

// Writes an INT attribute, replacing one of the same name.
void setOrReplaceInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() != name) continue;
    a.Clear();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(value);
    return;
  }
  setIntAttr(node, name, value);
}

void annotate(BuilderImpl& impl, const char* attribute, const char* method,
              const std::set<TensorId>& names, int64_t value) {
  if (value < 0) {
    throw error("Builder::{}: value {} for {} is negative; it is an index >= 0", method, value,
                describeNames(names));
  }
  setOrReplaceInt(impl.placementNode(names, std::string("Builder::") + method), attribute, value);
}

int64_t annotation(BuilderImpl& impl, const char* attribute, const char* method,
                   const std::set<TensorId>& names) {
  const onnx::NodeProto& node = impl.placementNode(names, std::string("Builder::") + method);
  for (const auto& a : node.attribute()) {
    if (a.name() == attribute && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  throw error("Builder::{}: node '{}' (the node of {}) has no {} attribute (none was set)", method,
              node.name(), describeNames(names), attribute);
}

BuilderImpl::AttrValue scopeValue(const std::string& name, const std::any& v) {
  const std::type_info& t = v.type();
  if (t == typeid(int64_t)) return std::any_cast<int64_t>(v);
  if (t == typeid(int32_t)) return int64_t{std::any_cast<int32_t>(v)};
  if (t == typeid(uint32_t)) return int64_t{std::any_cast<uint32_t>(v)};
  if (t == typeid(uint64_t)) return static_cast<int64_t>(std::any_cast<uint64_t>(v));
  if (t == typeid(bool)) return int64_t{std::any_cast<bool>(v) ? 1 : 0};
  if (t == typeid(float)) return std::any_cast<float>(v);
  if (t == typeid(std::string)) return std::any_cast<std::string>(v);
  if (t == typeid(const char*) && std::any_cast<const char*>(v) != nullptr) {
    return std::string(std::any_cast<const char*>(v));
  }
  if (t == typeid(std::vector<int64_t>)) return std::any_cast<std::vector<int64_t>>(v);
  if (t == typeid(std::vector<float>)) return std::any_cast<std::vector<float>>(v);
  if (t == typeid(std::vector<std::string>)) return std::any_cast<std::vector<std::string>>(v);
  throw error(
      "Builder::setAttribute: attribute '{}' holds a value of an unsupported type (expected an "
      "integer, bool, float, string or a vector of int64_t, float or string)",
      name);
}

// `scope` names the Python context manager (virtualGraph, ...).
int64_t scopeInt(const BuilderImpl& impl, const char* attribute, const char* scope) {
  const auto& scopes = const_cast<BuilderImpl&>(impl).scopeAttributes();
  const auto it = scopes.find(attribute);
  if (it == scopes.end() || !std::holds_alternative<int64_t>(it->second)) {
    throw error(
        "Builder: no {} scope is set (C++: setAttribute(\"{}\", value); Python: "
        "`with builder.{}(value):`)",
        scope, attribute, scope);
  }
  return std::get<int64_t>(it->second);
}

}  // namespace

void BuilderImpl::applyScopeAttributes(onnx::NodeProto& node) const {
  for (const auto& [name, value] : scopeAttributes_) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) setIntAttr(node, name, v);
          if constexpr (std::is_same_v<T, float>) setFloatAttr(node, name, v);
          if constexpr (std::is_same_v<T, std::string>) setStringAttr(node, name, v);
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) setIntsAttr(node, name, v);
          if constexpr (std::is_same_v<T, std::vector<float>>) setFloatsAttr(node, name, v);
          if constexpr (std::is_same_v<T, std::vector<std::string>>) setStringsAttr(node, name, v);
        },
        value);
  }
}

onnx::NodeProto& BuilderImpl::placementNode(const std::set<TensorId>& outputs,
                                            const std::string& method) {
  if (outputs.empty()) throw error("{}: no tensor names given to find the node by", method);
  if (onnx::NodeProto* node = findNodeWithOutputs(outputs, false)) return *node;
  for (const auto& id : outputs) {
    if (!hasTensor(id)) throw error("{}: '{}' is not a tensor of this model", method, id);
  }
  throw error(
      "{}: no node has all of {} as outputs (graph inputs and initializers have no node to "
      "annotate)",
      method, describeNames(outputs));
}

void Builder::virtualGraph(const TensorId& nodeOutputName, int64_t value) {
  virtualGraph(std::set<TensorId>{nodeOutputName}, value);
}
void Builder::virtualGraph(const std::set<TensorId>& nodeOutputNames, int64_t value) {
  annotate(*impl_, ir::kVirtualGraphAttribute, "virtualGraph", nodeOutputNames, value);
}
int64_t Builder::getVirtualGraph(const TensorId& nodeOutputName) {
  return getVirtualGraph(std::set<TensorId>{nodeOutputName});
}
int64_t Builder::getVirtualGraph(const std::set<TensorId>& nodeOutputNames) {
  return annotation(*impl_, ir::kVirtualGraphAttribute, "getVirtualGraph", nodeOutputNames);
}
void Builder::pipelineStage(const TensorId& nodeOutputName, int64_t value) {
  pipelineStage(std::set<TensorId>{nodeOutputName}, value);
}
void Builder::pipelineStage(const std::set<TensorId>& nodeOutputNames, int64_t value) {
  annotate(*impl_, ir::kPipelineStageAttribute, "pipelineStage", nodeOutputNames, value);
}
int64_t Builder::getPipelineStage(const TensorId& nodeOutputName) {
  return getPipelineStage(std::set<TensorId>{nodeOutputName});
}
int64_t Builder::getPipelineStage(const std::set<TensorId>& nodeOutputNames) {
  return annotation(*impl_, ir::kPipelineStageAttribute, "getPipelineStage", nodeOutputNames);
}
void Builder::executionPhase(const TensorId& nodeOutputName, int64_t value) {
  executionPhase(std::set<TensorId>{nodeOutputName}, value);
}
void Builder::executionPhase(const std::set<TensorId>& nodeOutputNames, int64_t value) {
  annotate(*impl_, ir::kExecutionPhaseAttribute, "executionPhase", nodeOutputNames, value);
}
int64_t Builder::getExecutionPhase(const TensorId& nodeOutputName) {
  return getExecutionPhase(std::set<TensorId>{nodeOutputName});
}
int64_t Builder::getExecutionPhase(const std::set<TensorId>& nodeOutputNames) {
  return annotation(*impl_, ir::kExecutionPhaseAttribute, "getExecutionPhase", nodeOutputNames);
}

void Builder::setAttribute(const std::string& attribute, any value) {
  if (attribute.empty()) throw error("Builder::setAttribute: the attribute name is empty");
  auto& scopes = impl_->scopeAttributes();
  if (scopes.count(attribute)) {
    throw error("Builder::setAttribute: attribute '{}' is set already (clearAttribute first)",
                attribute);
  }
  scopes.emplace(attribute, scopeValue(attribute, value));
}

any Builder::getAttribute(const std::string& attribute) const {
  auto& scopes = impl_->scopeAttributes();
  const auto it = scopes.find(attribute);
  if (it == scopes.end())
    throw error("Builder::getAttribute: attribute '{}' is not set", attribute);
  return std::visit([](const auto& v) { return any(v); }, it->second);
}

bool Builder::hasAttribute(const std::string& attribute) const {
  return impl_->scopeAttributes().count(attribute) != 0;
}

void Builder::clearAttribute(const std::string& attribute) {
  if (impl_->scopeAttributes().erase(attribute) == 0) {
    throw error("Builder::clearAttribute: attribute '{}' is not set", attribute);
  }
}

int64_t Builder::getVirtualGraph() const {
  return scopeInt(*impl_, ir::kVirtualGraphAttribute, "virtualGraph");
}
int64_t Builder::getPipelineStage() const {
  return scopeInt(*impl_, ir::kPipelineStageAttribute, "pipelineStage");
}
int64_t Builder::getExecutionPhase() const {
  return scopeInt(*impl_, ir::kExecutionPhaseAttribute, "executionPhase");
}
bool Builder::hasVirtualGraph() const {
  return hasAttribute(ir::kVirtualGraphAttribute);
}
bool Builder::hasPipelineStage() const {
  return hasAttribute(ir::kPipelineStageAttribute);
}
bool Builder::hasExecutionPhase() const {
  return hasAttribute(ir::kExecutionPhaseAttribute);
}

}  // namespace xtrain
