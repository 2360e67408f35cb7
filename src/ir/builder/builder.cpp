// xtrain::Builder: the public face of BuilderImpl.
#include "xtrain/builder.hpp"

#include <functional>
#include <limits>
#include <typeinfo>

#include "common/output_file.hpp"
#include "ir/builder/builder_impl.hpp"
#include "ir/onnx/onnx_export.hpp"
#include "ir/onnx/onnx_metadata.hpp"

namespace xtrain {

NameScope::NameScope(Builder& builder, const std::string& name) : builder_(builder) {
  builder_.pushNameScope(name);
}

NameScope::~NameScope() {
  try {
    builder_.popNameScope();
  } catch (...) {
    // The scope was popped by hand already; a destructor must not throw.
  }
}

Builder::Builder() : impl_(std::make_unique<BuilderImpl>()) {}
Builder::~Builder() = default;

std::unique_ptr<Builder> Builder::create() {
  return std::unique_ptr<Builder>(new Builder());
}

std::unique_ptr<Builder> Builder::createFromOnnxModel(const std::string& modelProtoOrFilename) {
  auto source = ir::onnxutil::loadModelSource(modelProtoOrFilename);
  onnx::ModelProto model = ir::onnxutil::parseModel(source);
  std::unique_ptr<Builder> b(new Builder());
  b->impl_ = std::make_unique<BuilderImpl>(std::move(model));
  return b;
}

AiOnnxOpset11 Builder::aiOnnxOpset11() {
  impl_->requireOpset("", 11);
  return AiOnnxOpset11(impl_.get());
}
AiOnnxOpset12 Builder::aiOnnxOpset12() {
  impl_->requireOpset("", 12);
  return AiOnnxOpset12(impl_.get());
}
AiOnnxOpset13 Builder::aiOnnxOpset13() {
  impl_->requireOpset("", 13);
  return AiOnnxOpset13(impl_.get());
}
AiOnnxOpset14 Builder::aiOnnxOpset14() {
  impl_->requireOpset("", 14);
  return AiOnnxOpset14(impl_.get());
}
AiOnnxOpset15 Builder::aiOnnxOpset15() {
  impl_->requireOpset("", 15);
  return AiOnnxOpset15(impl_.get());
}
AiOnnxOpset16 Builder::aiOnnxOpset16() {
  impl_->requireOpset("", 16);
  return AiOnnxOpset16(impl_.get());
}
AiOnnxOpset17 Builder::aiOnnxOpset17() {
  impl_->requireOpset("", 17);
  return AiOnnxOpset17(impl_.get());
}
AiGraphcoreOpset1 Builder::aiGraphcoreOpset1() {
  impl_->requireOpset(ir::kGraphcoreDomain, 1);
  return AiGraphcoreOpset1(impl_.get());
}

TensorId Builder::addInputTensor(const TensorInfo& info, const std::string& debugName) {
  return impl_->addInputTensor(info, debugName);
}

TensorId Builder::addInputTensor(const std::string& dataType, const Shape& shape,
                                 const std::string& debugName) {
  return impl_->addInputTensor(TensorInfo(dataType, shape), debugName);
}

TensorId Builder::addInputTensor(const TensorInfo& info, const InputSettings& settings,
                                 const std::string& debugName) {
  TensorId id = impl_->addInputTensor(info, debugName);
  if (settings.replicatedStreamMode() == ReplicatedStreamMode::Broadcast) {
    impl_->setMetadata(ir::kReplicatedStreamModePrefix + id, "Broadcast");
  }
  return id;
}

TensorId Builder::addInitializedInputTensor(const ConstVoidData& initData,
                                            const std::string& debugName) {
  return impl_->addInitializer(initData, debugName);
}

TensorId Builder::addInitializedInputTensor(const ConstVoidData& initData,
                                            const VariableSettings& settings,
                                            const std::string& debugName) {
  // With the replication factor embedded, the group count is known: check the initial value's
  // leading dimension now and let shape inference see the weight's per-replica shape. (Without it
  // the session checks the value when it knows its replicas.)
  std::optional<Shape> replicaShape;
  if (auto replicas = ir::readReplicationFactor(impl_->metadata())) {
    if (settings.getGroupCount(*replicas) > 1) {
      replicaShape = settings.shapeOnReplica(initData.info.shape(), *replicas,
                                             debugName.empty() ? "init" : debugName);
    }
  }
  TensorId id = impl_->addInitializer(initData, debugName);
  ir::ModelMetadata md;
  ir::writeVariableSettings(md, id, settings);
  for (const auto& [key, value] : md) impl_->setMetadata(key, value);
  if (replicaShape) impl_->setReplicaShape(id, *replicaShape);
  return id;
}

void Builder::addOutputTensor(const TensorId& id) {
  impl_->addOutputTensor(id);
}

namespace {

// One attribute value given to Builder::customOp as the node will hold it; the types PopART's
// Builder accepts in its popart::any, each to the ONNX attribute kind PopART gives it.
CustomOpAttribute customOpAttributeOf(const std::string& name, const std::any& v) {
  const std::type_info& t = v.type();
  if (t == typeid(int64_t)) return std::any_cast<int64_t>(v);
  if (t == typeid(int32_t)) return int64_t{std::any_cast<int32_t>(v)};
  if (t == typeid(uint32_t)) return int64_t{std::any_cast<uint32_t>(v)};
  if (t == typeid(bool)) return int64_t{std::any_cast<bool>(v) ? 1 : 0};
  if (t == typeid(uint64_t)) {
    const uint64_t u = std::any_cast<uint64_t>(v);
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw error("Builder::customOp: attribute '{}' = {} does not fit an ONNX int (int64)", name,
                  u);
    }
    return static_cast<int64_t>(u);
  }
  if (t == typeid(float)) return std::any_cast<float>(v);
  if (t == typeid(std::string)) return std::any_cast<std::string>(v);
  if (t == typeid(const char*) || t == typeid(char*)) {
    const char* c = t == typeid(char*) ? std::any_cast<char*>(v) : std::any_cast<const char*>(v);
    if (c == nullptr) throw error("Builder::customOp: attribute '{}' is a null string", name);
    return std::string(c);
  }
  if (t == typeid(std::vector<int64_t>)) return std::any_cast<std::vector<int64_t>>(v);
  if (t == typeid(std::vector<float>)) return std::any_cast<std::vector<float>>(v);
  if (t == typeid(std::vector<std::string>)) return std::any_cast<std::vector<std::string>>(v);
  if (!v.has_value()) throw error("Builder::customOp: attribute '{}' has no value", name);
  const char* hint = t == typeid(double)                ? " (a double: write a float, e.g. 0.5f)"
                     : t == typeid(std::vector<double>) ? " (write std::vector<float>)"
                     : t == typeid(std::vector<int>)    ? " (write std::vector<int64_t>)"
                                                        : "";
  throw error(
      "Builder::customOp: attribute '{}' holds a value of an unsupported type{} (expected "
      "int32_t, uint32_t, int64_t, uint64_t, bool, float, std::string, const char*, or a "
      "std::vector of int64_t, float or std::string)",
      name, hint);
}

// The node of a customOp call: checks the type and every attribute value first, so that a bad one
// leaves the model unchanged, then emits the node and sets its attributes.
std::vector<TensorId> addCustomNode(BuilderImpl& impl, const OperatorIdentifier& opid,
                                    int opsetVersion, const std::map<std::string, any>& attributes,
                                    const std::function<BuilderImpl::Emitted()>& emit) {
  if (opid.type.empty()) throw error("Builder::customOp: the op type must not be empty");
  std::map<std::string, CustomOpAttribute> values;
  for (const auto& [attrName, value] : attributes) {
    values.emplace(attrName, customOpAttributeOf(attrName, value));
  }
  impl.requireOpset(opid.domain, opsetVersion);
  auto e = emit();
  for (const auto& [attrName, value] : values) {
    std::visit(
        [&, &n = attrName](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>)
            setIntAttr(*e.node, n, v);
          else if constexpr (std::is_same_v<T, float>)
            setFloatAttr(*e.node, n, v);
          else if constexpr (std::is_same_v<T, std::string>)
            setStringAttr(*e.node, n, v);
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
            setIntsAttr(*e.node, n, v);
          else if constexpr (std::is_same_v<T, std::vector<float>>)
            setFloatsAttr(*e.node, n, v);
          else
            setStringsAttr(*e.node, n, v);
        },
        value);
  }
  return e.outputs;
}

}  // namespace

std::vector<TensorId> Builder::customOp(const std::string& opName, int opVersion,
                                        const std::string& domain,
                                        const std::vector<TensorId>& inputs,
                                        const std::map<std::string, any>& attributes,
                                        unsigned numOutputs, const std::string& name) {
  return customOp(OperatorIdentifier(domain, opName, opVersion), opVersion, inputs, numOutputs,
                  attributes, name);
}

std::vector<TensorId> Builder::customOp(const OperatorIdentifier& opid, int opsetVersion,
                                        const std::vector<TensorId>& inputs, unsigned numOutputs,
                                        const std::map<std::string, any>& attributes,
                                        const std::string& debugContext) {
  return addCustomNode(*impl_, opid, opsetVersion, attributes, [&] {
    return impl_->emit(opid.type, opid.domain, inputs, numOutputs, debugContext);
  });
}

void Builder::customOp(const OperatorIdentifier& opid, int opsetVersion,
                       const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
                       const std::map<std::string, any>& attributes,
                       const std::string& debugContext) {
  addCustomNode(*impl_, opid, opsetVersion, attributes,
                [&] { return impl_->emit(opid.type, opid.domain, inputs, outputs, debugContext); });
}

void Builder::pushNameScope(const std::string& name) {
  impl_->pushNameScope(name);
}
void Builder::popNameScope() {
  impl_->popNameScope();
}
std::string Builder::getNameScope(const std::string& name) const {
  return impl_->scopePrefix() + name;
}

void Builder::embedReplicationFactor(int replicationFactor) {
  if (replicationFactor < 1) {
    throw error("Builder::embedReplicationFactor: the replication factor must be >= 1, got {}",
                replicationFactor);
  }
  impl_->setMetadata(ir::kReplicationFactorKey, std::to_string(replicationFactor));
}

void Builder::setGraphName(const std::string& name) {
  impl_->setGraphName(name);
}
void Builder::setMetadata(const std::string& key, const std::string& value) {
  impl_->setMetadata(key, value);
}

Shape Builder::getTensorShape(const TensorId& id) {
  return impl_->tensorInfo(id).shape();
}
DataType Builder::getTensorDataType(const TensorId& id) {
  return impl_->tensorInfo(id).dataType();
}
TensorInfo Builder::getTensorInfo(const TensorId& id) {
  return impl_->tensorInfo(id);
}
bool Builder::hasTensor(const TensorId& id) const {
  return impl_->hasTensor(id);
}

std::vector<TensorId> Builder::getInputTensorIds() const {
  return impl_->inputIds();
}
std::vector<TensorId> Builder::getOutputTensorIds() const {
  return impl_->outputIds();
}
std::vector<TensorId> Builder::getTrainableTensorIds() const {
  return impl_->trainableIds();
}
std::vector<TensorId> Builder::getValueTensorIds() const {
  return impl_->valueIds();
}
bool Builder::isInitializer(const TensorId& id) const {
  return impl_->isInitializer(id);
}

std::string Builder::getModelProto() {
  return impl_->modelProto();
}

void Builder::saveModelProto(const std::string& path) {
  writeOutputFile(path, getModelProto(), "Builder::saveModelProto");
}

}  // namespace xtrain
