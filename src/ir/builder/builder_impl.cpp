#include "ir/builder/builder_impl.hpp"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "ir/graph.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

namespace {

constexpr int kDefaultOnnxOpset = 13;

onnx::AttributeProto* newAttr(onnx::NodeProto& node, const std::string& name,
                              onnx::AttributeProto::AttributeType type) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() == name) {
      a.Clear();
      a.set_name(name);
      a.set_type(type);
      return &a;
    }
  }
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

}  // namespace

void setIntAttr(onnx::NodeProto& node, const std::string& name, int64_t v) {
  newAttr(node, name, onnx::AttributeProto::INT)->set_i(v);
}
void setGraphAttr(onnx::NodeProto& node, const std::string& name, onnx::GraphProto graph) {
  *newAttr(node, name, onnx::AttributeProto::GRAPH)->mutable_g() = std::move(graph);
}
void setFloatAttr(onnx::NodeProto& node, const std::string& name, float v) {
  newAttr(node, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
void setStringAttr(onnx::NodeProto& node, const std::string& name, const std::string& v) {
  newAttr(node, name, onnx::AttributeProto::STRING)->set_s(v);
}
void setIntsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = newAttr(node, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void setFloatsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<float>& v) {
  auto* a = newAttr(node, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
void setStringsAttr(onnx::NodeProto& node, const std::string& name,
                    const std::vector<std::string>& v) {
  auto* a = newAttr(node, name, onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

void setTensorAttr(onnx::NodeProto& node, const std::string& name, const void* data,
                   const TensorInfo& info) {
  ir::onnxutil::setTensorProto(*newAttr(node, name, onnx::AttributeProto::TENSOR)->mutable_t(),
                               data, info);
}

BuilderImpl::BuilderImpl() {
  model_.set_ir_version(onnx::IR_VERSION);
  model_.set_producer_name("xtrain");
  model_.set_producer_version("0.1.0");
  model_.mutable_graph()->set_name("graph");
  init();
}

BuilderImpl::BuilderImpl(onnx::ModelProto model) : model_(std::move(model)) {
  const auto& g = model_.graph();
  for (const auto& in : g.input()) tensorIds_.insert(in.name());
  for (const auto& init : g.initializer()) tensorIds_.insert(init.name());
  for (const auto& node : g.node()) {
    for (const auto& out : node.output()) {
      if (!out.empty()) tensorIds_.insert(out);
    }
    if (!node.name().empty()) nodeNames_.insert(node.name());
  }
  checkExternalData();
  init();
}

void BuilderImpl::init() {
  ir::onnxutil::registerGraphcoreSchemas();
}

void BuilderImpl::requireOpset(const std::string& domain, int version) {
  const std::string canonical = ir::onnxutil::canonicalDomain(domain);
  for (const auto& o : model_.opset_import()) {
    if (ir::onnxutil::canonicalDomain(o.domain()) != canonical) continue;
    if (o.version() == version) return;
    throw error(
        "Builder: the model already uses {} opset {}; one model uses one version of each "
        "domain (asked for opset {})",
        canonical, o.version(), version);
  }
  auto* o = model_.add_opset_import();
  o->set_domain(domain == ir::kOnnxDomain ? std::string() : domain);
  o->set_version(version);
  ++generation_;
}

void BuilderImpl::pushNameScope(const std::string& name) {
  if (name.empty()) throw error("Builder::pushNameScope: the scope name must not be empty");
  scopes_.push_back(name);
}

void BuilderImpl::popNameScope() {
  if (scopes_.empty()) throw error("Builder::popNameScope: no name scope to pop");
  scopes_.pop_back();
}

std::string BuilderImpl::scopePrefix() const {
  std::string p;
  for (const auto& s : scopes_) p += s + "/";
  return p;
}

// The k-th repeat of an input's name is name/k, as PopART's Builder names them ("input/1",
// "init_input/1"), which programs pass back by name (toTrackTensors, anchors of gradients).
TensorId BuilderImpl::uniqueTensorId(const std::string& base) {
  for (int k = 0;; ++k) {
    std::string id = k == 0 ? base : base + "/" + std::to_string(k);
    if (!idTaken(id)) return id;
  }
}

// A node's name: base, else base_1, base_2, ... (its outputs are named apart, uniqueTensorId).
std::string BuilderImpl::uniqueNodeBase(const std::string& base) {
  for (int k = 0;; ++k) {
    std::string name = k == 0 ? base : base + "_" + std::to_string(k);
    if (!nodeNames_.count(name)) return name;
  }
}

TensorId BuilderImpl::addInputTensor(const TensorInfo& info, const std::string& debugName) {
  if (!info.isSet()) throw error("Builder::addInputTensor: the TensorInfo has no data type");
  TensorId id = uniqueTensorId(scopePrefix() + (debugName.empty() ? "input" : debugName));
  onnx::ValueInfoProto* in = model_.mutable_graph()->add_input();
  in->set_name(id);
  *in->mutable_type() = ir::onnxutil::tensorTypeProto(info);
  tensorIds_.insert(id);
  ++generation_;
  return id;
}

TensorId BuilderImpl::addInitializer(const ConstVoidData& value, const std::string& debugName) {
  if (!value.info.isSet()) {
    throw error("Builder::addInitializedInputTensor: the ConstVoidData has no data type");
  }
  if (value.data == nullptr && value.info.nbytes() != 0) {
    throw error("Builder::addInitializedInputTensor: the ConstVoidData for {} has no data",
                value.info.toString());
  }
  // PopART's default name.
  TensorId id = uniqueTensorId(scopePrefix() + (debugName.empty() ? "init_input" : debugName));
  onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
  t->set_name(id);
  // In the typed field, as PopART's Builder: programs read initializers back from float_data.
  ir::onnxutil::setTensorProto(*t, value.data, value.info, ir::onnxutil::TensorDataField::Typed);
  tensorIds_.insert(id);
  ++generation_;
  return id;
}

void BuilderImpl::addOutputTensor(const TensorId& id) {
  if (!visible(id)) {
    throw error("Builder::addOutputTensor: '{}' is not a tensor of this model", id);
  }
  // A subgraph may return one tensor twice (a Loop's carried value and its scan output).
  for (const auto& out : model_.graph().output()) {
    if (out.name() == id && parent_ == nullptr) {
      throw error("Builder::addOutputTensor: '{}' is already an output", id);
    }
  }
  model_.mutable_graph()->add_output()->set_name(id);
  ++generation_;
}

void BuilderImpl::setMetadata(const std::string& key, const std::string& value) {
  ir::onnxutil::setMetadataProp(model_, key, value);
}

std::map<std::string, std::string> BuilderImpl::metadata() const {
  return ir::onnxutil::metadataProps(model_);
}

void BuilderImpl::setReplicaShape(const TensorId& id, const Shape& shape) {
  replicaShapes_[id] = shape;
  ++generation_;
}

void BuilderImpl::setGraphName(const std::string& name) {
  model_.mutable_graph()->set_name(name);
}

std::vector<TensorId> BuilderImpl::node(const char* method, const std::string& type,
                                        const std::vector<TensorId>& args, size_t minArgs,
                                        size_t maxArgs, unsigned numOutputs,
                                        const std::vector<NodeAttr>& attrs,
                                        const std::string& debugContext,
                                        const std::string& domain) {
  checkArity(method, type, args, minArgs, maxArgs);
  Emitted e = emit(type, domain, args, numOutputs, debugContext);
  for (const NodeAttr& a : attrs) {
    if (!a.value) continue;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) setIntAttr(*e.node, a.name, v);
          if constexpr (std::is_same_v<T, float>) setFloatAttr(*e.node, a.name, v);
          if constexpr (std::is_same_v<T, std::string>) setStringAttr(*e.node, a.name, v);
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) setIntsAttr(*e.node, a.name, v);
          if constexpr (std::is_same_v<T, std::vector<float>>) setFloatsAttr(*e.node, a.name, v);
          if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            setStringsAttr(*e.node, a.name, v);
          }
        },
        *a.value);
  }
  return e.outputs;
}

void BuilderImpl::checkArity(const char* method, const std::string& type,
                             const std::vector<TensorId>& args, size_t min, size_t max) {
  if (args.size() < min || args.size() > max) {
    // max == SIZE_MAX: no upper bound (concat, sum, ...).
    const std::string expected = min == max ? std::to_string(min)
                                 : max == SIZE_MAX
                                     ? "at least " + std::to_string(min)
                                     : std::to_string(min) + " to " + std::to_string(max);
    throw error(
        "{} has invalid number of inputs {}: Builder: {} takes {} input tensors, got {} ({})", type,
        args.size(), method, expected, args.size(), args);
  }
}

BuilderImpl::Emitted BuilderImpl::emit(const std::string& opType, const std::string& domain,
                                       const std::vector<TensorId>& inputs, unsigned numOutputs,
                                       const std::string& debugContext) {
  // Each output is a named tensor made here: an absurd count (a custom op's numOutputs from user
  // code) would run for minutes and exhaust memory before anything could check it.
  constexpr unsigned kMaxOutputs = 1u << 16;
  if (numOutputs > kMaxOutputs) {
    throw error("op {} ({}): numOutputs {} is more than the {} outputs a node may have", opType,
                domain.empty() ? "ai.onnx" : domain, numOutputs, kMaxOutputs);
  }
  const std::string stem = scopePrefix() + (debugContext.empty() ? opType : debugContext);
  // Output i is stem:i, and its k-th repeat stem:i/k, each output on its own, as PopART's Builder
  // names them ("Add:0", then "Add:0/1"): programs print and anchor them by these names. The node's
  // own name is made unique apart (stem, stem_1, ...).
  std::vector<TensorId> outputs;
  for (unsigned i = 0; i < numOutputs; ++i) {
    outputs.push_back(uniqueTensorId(stem + ":" + std::to_string(i)));
  }
  return emitNode(opType, domain, inputs, uniqueNodeBase(stem), outputs);
}

BuilderImpl::Emitted BuilderImpl::emit(const std::string& opType, const std::string& domain,
                                       const std::vector<TensorId>& inputs,
                                       const std::vector<TensorId>& outputs,
                                       const std::string& debugContext) {
  const std::string base =
      uniqueNodeBase(scopePrefix() + (debugContext.empty() ? opType : debugContext));
  std::set<TensorId> seen;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorId& out = outputs[i];
    if (out.empty()) throw error("Builder: {} '{}': output {} has an empty id", opType, base, i);
    if (hasTensor(out) || !seen.insert(out).second) {
      throw error("Builder: {} '{}': output {} ('{}') is already a tensor of this model", opType,
                  base, i, out);
    }
  }
  return emitNode(opType, domain, inputs, base, outputs);
}

// The opsets before 11 (AiOnnxOpset6..10) inherit opset 11's methods: refuse an op ONNX did not
// have yet at the model's version (or had deprecated), as PopART's opset objects have no such
// method.
void BuilderImpl::checkOpExists(const std::string& opType, const std::string& domain) const {
  if (!domain.empty() && domain != ir::kOnnxDomain) return;
  int version = 0;
  for (const auto& o : model_.opset_import()) {
    if (o.domain().empty() || o.domain() == ir::kOnnxDomain)
      version = static_cast<int>(o.version());
  }
  if (version == 0 || version >= 11) return;
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(opType, version, "");
  if (schema == nullptr || schema->Deprecated()) {
    throw error("Builder: ai.onnx opset {} has no {} op{} (use a later opset)", version, opType,
                schema == nullptr ? "" : " (deprecated)");
  }
}

BuilderImpl::Emitted BuilderImpl::emitNode(const std::string& opType, const std::string& domain,
                                           const std::vector<TensorId>& inputs,
                                           const std::string& base,
                                           const std::vector<TensorId>& outputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].empty() && !visible(inputs[i])) {
      throw error(
          "Builder: {} '{}': input {} ('{}') is not a tensor of this model (create it with "
          "addInputTensor, addInitializedInputTensor or an op)",
          opType, base, i, inputs[i]);
    }
  }
  checkOpExists(opType, domain);
  if (logging::shouldLog(logging::Module::builder, logging::Level::Debug)) {
    // PopART's line for each op added ("Adding ai.onnx.Abs ..."), which its programs look for.
    const std::string d = domain.empty() ? std::string(ir::kOnnxDomain) : domain;
    int64_t version = 0;
    for (const auto& o : model_.opset_import()) {
      const std::string od = o.domain().empty() ? std::string(ir::kOnnxDomain) : o.domain();
      if (od == d) version = o.version();
    }
    logging::builder::debug("Adding {}.{} to builder opset:{}, numInputs:{} numOutputs:{} name:{}",
                            d, opType, version, inputs.size(), outputs.size(), base);
  }
  onnx::NodeProto* node = model_.mutable_graph()->add_node();
  node->set_op_type(opType);
  if (!domain.empty() && domain != ir::kOnnxDomain) node->set_domain(domain);
  node->set_name(base);
  for (const auto& in : inputs) node->add_input(in);
  applyScopeAttributes(*node);
  Emitted e{node, outputs};
  for (const auto& out : outputs) {
    node->add_output(out);
    tensorIds_.insert(out);
  }
  nodeNames_.insert(base);
  ++generation_;
  return e;
}

TensorId BuilderImpl::emit1(const std::string& opType, const std::vector<TensorId>& inputs,
                            const std::string& debugContext, const std::string& domain) {
  return emit(opType, domain, inputs, 1, debugContext).outputs.at(0);
}

TensorId BuilderImpl::constant(const void* data, const TensorInfo& info,
                               const std::string& debugContext) {
  if (!info.isSet()) throw error("Builder: constant: the value has no data type");
  Emitted e = emit("Constant", "", {}, 1, debugContext);
  auto* a = e.node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  ir::onnxutil::setTensorProto(*a->mutable_t(), data, info);
  return e.outputs[0];
}

TensorId BuilderImpl::constantInt64(const std::vector<int64_t>& values,
                                    const std::string& debugContext) {
  return constant(values.data(), TensorInfo(DataType::INT64, {static_cast<int64_t>(values.size())}),
                  debugContext);
}

onnx::ModelProto BuilderImpl::modelForExport() const {
  onnx::ModelProto m = model_;
  if (ir::onnxutil::onnxOpsetOf(m) == 0) {
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(kDefaultOnnxOpset);
  }
  return m;
}

onnx::ModelProto BuilderImpl::modelForInference() const {
  // Shape inference reads initializer values only for shape-like inputs (Reshape's shape, ...):
  // keep the small and the integer initializers, and declare the others as typed inputs, so that
  // each inference run does not copy the weights.
  onnx::ModelProto m;
  m.set_ir_version(model_.ir_version());
  *m.mutable_opset_import() = model_.opset_import();
  if (ir::onnxutil::onnxOpsetOf(m) == 0) {
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(kDefaultOnnxOpset);
  }
  const onnx::GraphProto& src = model_.graph();
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name(src.name());
  *g->mutable_node() = src.node();
  *g->mutable_input() = src.input();
  *g->mutable_output() = src.output();
  *g->mutable_value_info() = src.value_info();
  if (parent_ != nullptr) addOuterTypes(*g);
  std::set<std::string> declared;
  for (const auto& in : src.input()) declared.insert(in.name());
  for (const auto& init : src.initializer()) {
    int64_t n = 1;
    for (int64_t d : init.dims()) n *= d;
    const bool integer = init.data_type() == onnx::TensorProto::INT64 ||
                         init.data_type() == onnx::TensorProto::INT32;
    const auto grouped = replicaShapes_.find(init.name());
    if (grouped == replicaShapes_.end() && (n <= 64 || integer)) {
      *g->add_initializer() = init;
    } else if (!declared.count(init.name())) {
      onnx::ValueInfoProto* in = g->add_input();
      in->set_name(init.name());
      auto* tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(init.data_type());
      auto* shape = tt->mutable_shape();
      if (grouped != replicaShapes_.end()) {
        for (int64_t d : grouped->second) shape->add_dim()->set_dim_value(d);
      } else {
        for (int64_t d : init.dims()) shape->add_dim()->set_dim_value(d);
      }
    }
  }
  addRecurrentHiddenSizes(*g);
  return m;
}

// ONNX's shape inference of GRU, LSTM and RNN takes the hidden size from the attribute only, which
// the Builder (as PopART's) writes only when given: the inference model gets R's
// [num_directions, gates * hidden, hidden] last dimension when R is a graph input, an initializer
// or a Constant.
void BuilderImpl::addRecurrentHiddenSizes(onnx::GraphProto& g) const {
  auto lastDim = [&](const std::string& id) -> std::optional<int64_t> {
    for (const auto& in : g.input()) {
      if (in.name() != id || !in.type().tensor_type().has_shape()) continue;
      const auto& shape = in.type().tensor_type().shape();
      if (shape.dim_size() == 3 && shape.dim(2).has_dim_value()) return shape.dim(2).dim_value();
    }
    for (const auto& init : g.initializer()) {
      if (init.name() == id && init.dims_size() == 3) return init.dims(2);
    }
    for (const auto& node : g.node()) {
      if (node.op_type() != "Constant" || node.output_size() != 1 || node.output(0) != id) continue;
      for (const auto& a : node.attribute()) {
        if (a.name() == "value" && a.t().dims_size() == 3) return a.t().dims(2);
      }
    }
    return std::nullopt;
  };
  for (auto& node : *g.mutable_node()) {
    const std::string& t = node.op_type();
    if ((t != "GRU" && t != "LSTM" && t != "RNN") || node.input_size() < 3) continue;
    if (!node.domain().empty() && node.domain() != ir::kOnnxDomain) continue;
    bool has = false;
    for (const auto& a : node.attribute()) has = has || a.name() == "hidden_size";
    if (const auto h = lastDim(node.input(2)); !has && h) setIntAttr(node, "hidden_size", *h);
  }
}

void BuilderImpl::runInference() {
  if (inferredGeneration_ == generation_) return;
  inferred_.clear();
  onnx::ModelProto m = modelForInference();
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // Non-strict inference rarely throws; what was inferred before the failure is kept.
  }
  const auto& g = m.graph();
  for (const auto& init : g.initializer()) {
    try {
      inferred_[init.name()] =
          ir::onnxutil::tensorTypeProto(ir::onnxutil::tensorProtoInfo(init, init.name()));
    } catch (const error&) {
    }
  }
  // Inference may leave an empty TypeProto where it learnt nothing: keep only tensor types.
  auto keep = [&](const onnx::ValueInfoProto& vi, bool overwrite) {
    if (vi.has_type() && vi.type().has_tensor_type() &&
        (overwrite || !inferred_.count(vi.name()))) {
      inferred_[vi.name()] = vi.type();
    }
  };
  for (const auto& vi : g.input()) keep(vi, true);
  for (const auto& vi : g.value_info()) keep(vi, true);
  for (const auto& vi : g.output()) keep(vi, false);
  inferredGeneration_ = generation_;
}

std::string BuilderImpl::strictInferenceError() {
  onnx::ModelProto m = modelForInference();
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return msg;
  }
  return {};
}

TensorInfo BuilderImpl::tensorInfo(const TensorId& id) {
  if (!hasTensor(id)) throw error("Builder: '{}' is not a tensor of this model", id);
  runInference();
  auto it = inferred_.find(id);
  const bool typed = it != inferred_.end() && it->second.has_tensor_type() &&
                     it->second.tensor_type().elem_type() != 0;
  if (!typed || !it->second.tensor_type().has_shape()) {
    if (auto info = irInfo(id)) return *info;
    std::string producer;
    for (const auto& node : model_.graph().node()) {
      for (const auto& out : node.output()) {
        if (out == id) {
          producer = node.op_type() + " '" + node.name() + "'" +
                     (node.domain().empty() ? std::string() : " (domain " + node.domain() + ")");
        }
      }
    }
    const std::string why = strictInferenceError();
    throw error("Builder: cannot infer the {} of '{}'{}: {}", typed ? "shape" : "type and shape",
                id, producer.empty() ? std::string() : ", output of " + producer,
                why.empty() ? std::string("ONNX shape inference has no rule for its producer or "
                                          "lacks the values it depends on")
                            : why);
  }
  const auto& tt = it->second.tensor_type();
  DataType type;
  try {
    type = dataTypeFromOnnx(tt.elem_type());
  } catch (const error&) {
    throw error("Builder: '{}' has ONNX element type {}, which xtrain does not support", id,
                tt.elem_type());
  }
  Shape shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (!d.has_dim_value()) {
      throw error(
          "Builder: dimension {} of '{}' is not known{} (ONNX shape inference could not "
          "determine it)",
          i, id, d.dim_param().empty() ? std::string() : " ('" + d.dim_param() + "')");
    }
    shape.push_back(d.dim_value());
  }
  return TensorInfo(type, shape);
}

std::vector<TensorId> BuilderImpl::inputIds() const {
  std::set<std::string> inits;
  for (const auto& init : model_.graph().initializer()) inits.insert(init.name());
  std::vector<TensorId> ids;
  for (const auto& in : model_.graph().input()) {
    if (!inits.count(in.name())) ids.push_back(in.name());
  }
  return ids;
}

std::vector<TensorId> BuilderImpl::outputIds() const {
  std::vector<TensorId> ids;
  for (const auto& out : model_.graph().output()) ids.push_back(out.name());
  return ids;
}

std::vector<TensorId> BuilderImpl::trainableIds() const {
  std::vector<TensorId> ids;
  for (const auto& init : model_.graph().initializer()) {
    try {
      if (isFloatingPoint(dataTypeFromOnnx(init.data_type()))) ids.push_back(init.name());
    } catch (const error&) {
    }
  }
  return ids;
}

std::vector<TensorId> BuilderImpl::valueIds() const {
  std::vector<TensorId> ids;
  for (const auto& node : model_.graph().node()) {
    for (const auto& out : node.output()) {
      if (!out.empty()) ids.push_back(out);
    }
  }
  return ids;
}

bool BuilderImpl::isInitializer(const TensorId& id) const {
  for (const auto& init : model_.graph().initializer()) {
    if (init.name() == id) return true;
  }
  return false;
}

std::string BuilderImpl::modelProto() {
  onnx::ModelProto m = modelForExport();
  runInference();
  for (auto& out : *m.mutable_graph()->mutable_output()) {
    if (out.has_type()) continue;
    auto it = inferred_.find(out.name());
    // Typed only with a shape: the checker requires the shape of a typed value.
    if (it != inferred_.end() && it->second.tensor_type().has_shape()) {
      *out.mutable_type() = it->second;
    } else if (auto info = irInfo(out.name())) {
      *out.mutable_type() = ir::onnxutil::tensorTypeProto(*info);
    }
  }
  return ir::onnxutil::serializeModel(m, "the Builder's model");
}

}  // namespace xtrain
