#include "ir/onnx/onnx_import.hpp"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "ir/onnx/node_import.hpp"
#include "ir/onnx/onnx_metadata.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "ir/op_registry.hpp"
#include "ir/placement/placement.hpp"
#include "ir/recompute/recompute.hpp"
#include "xtrain/popart_error.hpp"

namespace xtrain::ir {

namespace {

using onnxutil::canonicalDomain;

// "node #3 'fc1' (MatMul)": how messages name a node before it is an ir::Op.
std::string nodeLabel(const onnx::NodeProto& node, int index) {
  std::string s = "node #" + std::to_string(index);
  if (!node.name().empty()) s += " '" + node.name() + "'";
  s += " (" + (node.op_type().empty() ? std::string("<no op_type>") : node.op_type());
  if (!node.domain().empty() && node.domain() != kOnnxDomain) s += ", domain " + node.domain();
  return s + ")";
}

std::string dimProtoToString(const onnx::TensorShapeProto::Dimension& d) {
  return d.has_dim_value() ? std::to_string(d.dim_value())
                           : (d.dim_param().empty() ? std::string("?") : d.dim_param());
}

std::string shapeProtoToString(const onnx::TensorShapeProto& shape, const char* sep = ",") {
  std::string s = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    if (i) s += sep;
    s += dimProtoToString(shape.dim(i));
  }
  return s + "]";
}

// An import error whose message is PopART's whole sentence, which programs compare exactly:
// importOnnxModel passes it on without the "importing <model>: " context.
class UnwrappedImportError : public error {
 public:
  using error::error;
};

void checkOpsets(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    const std::string domain = canonicalDomain(o.domain());
    if (domain == kOnnxDomain && (o.version() < kMinOnnxOpset || o.version() > kMaxOnnxOpset)) {
      throw error(
          "the model uses ai.onnx opset {}; xtrain supports ai.onnx opsets {} to {} (convert the "
          "model, e.g. with onnx.version_converter)",
          o.version(), kMinOnnxOpset, kMaxOnnxOpset);
    }
    if (domain == kGraphcoreDomain && o.version() != kGraphcoreOpset) {
      throw error("the model uses ai.graphcore opset {}; xtrain supports ai.graphcore opset {}",
                  o.version(), kGraphcoreOpset);
    }
  }
}

// ConstantOfShape's one-element tensor attribute `value` becomes the canonical attributes `value`
// (an int for integer types, so INT64 fill values stay exact; else a float) and `dtype` (its ONNX
// type number: the output's element type).
void setFillValue(Attributes& attrs, const HostTensor& value, const std::string& label) {
  if (value.nelms() != 1) {
    throw error("{}: attribute 'value' is {}; ConstantOfShape takes a tensor of one element", label,
                value.info().toString());
  }
  attrs.set("dtype", static_cast<int64_t>(dataTypeToOnnx(value.dataType())));
  switch (value.dataType()) {
    case DataType::INT64: attrs.set("value", value.data<int64_t>()[0]); break;
    case DataType::FLOAT:
    case DataType::FLOAT16:
    case DataType::DOUBLE: attrs.set("value", static_cast<float>(value.getAsDouble(0))); break;
    default: attrs.set("value", static_cast<int64_t>(value.getAsDouble(0))); break;
  }
}

Attributes convertAttributes(const onnx::NodeProto& node, const std::string& label) {
  Attributes attrs;
  for (const auto& a : node.attribute()) {
    int type = a.type();
    if (type == onnx::AttributeProto::UNDEFINED) {
      // Old models may leave `type` unset: infer it from the field that holds a value.
      if (a.has_f())
        type = onnx::AttributeProto::FLOAT;
      else if (a.has_i())
        type = onnx::AttributeProto::INT;
      else if (a.has_s())
        type = onnx::AttributeProto::STRING;
      else if (a.has_t())
        type = onnx::AttributeProto::TENSOR;
      else if (a.has_g())
        type = onnx::AttributeProto::GRAPH;
      else if (a.floats_size())
        type = onnx::AttributeProto::FLOATS;
      else if (a.ints_size())
        type = onnx::AttributeProto::INTS;
      else if (a.strings_size())
        type = onnx::AttributeProto::STRINGS;
    }
    switch (type) {
      case onnx::AttributeProto::FLOAT: attrs.set(a.name(), a.f()); break;
      case onnx::AttributeProto::INT: attrs.set(a.name(), static_cast<int64_t>(a.i())); break;
      case onnx::AttributeProto::STRING: attrs.set(a.name(), a.s()); break;
      case onnx::AttributeProto::FLOATS:
        attrs.set(a.name(), std::vector<float>(a.floats().begin(), a.floats().end()));
        break;
      case onnx::AttributeProto::INTS:
        attrs.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case onnx::AttributeProto::STRINGS:
        attrs.set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR:
        if (node.op_type() == "ConstantOfShape" && a.name() == "value") {
          setFillValue(attrs, onnxutil::tensorFromProto(a.t(), label + " attribute 'value'"),
                       label);
          break;
        }
        throw error(
            "{}: attribute '{}' is a TENSOR; xtrain supports tensor attributes only on Constant "
            "and ConstantOfShape nodes (supported attribute types: INT, FLOAT, STRING, INTS, "
            "FLOATS, STRINGS)",
            label, a.name());
      default:
        throw error(
            "{}: attribute '{}' has type {}, which xtrain does not support (supported: INT, "
            "FLOAT, STRING, INTS, FLOATS, STRINGS)",
            label, a.name(), onnxutil::attributeTypeName(type));
    }
  }
  return attrs;
}

TensorInfo streamInfo(const onnx::ValueInfoProto& vi, const OnnxImportOptions& options) {
  const auto given = options.inputShapeInfo.find(vi.name());
  const bool hasGiven = given != options.inputShapeInfo.end();
  if (!vi.has_type() || !vi.type().has_tensor_type()) {
    if (hasGiven) return given->second;
    if (!vi.has_type()) {
      throw error(
          "input '{}' has no type in the model; give it with OnnxImportOptions::inputShapeInfo",
          vi.name());
    }
    throw error(
        "input '{}' is not a tensor (sequence, map, optional and sparse inputs are not "
        "supported)",
        vi.name());
  }
  const auto& tt = vi.type().tensor_type();
  DataType type = DataType::UNDEFINED;
  if (tt.elem_type() != 0) {
    try {
      type = dataTypeFromOnnx(tt.elem_type());
    } catch (const error&) {
      throw error("input '{}' has ONNX element type {}, which xtrain does not support", vi.name(),
                  tt.elem_type());
    }
  }
  if (hasGiven) {
    if (type != DataType::UNDEFINED && given->second.dataType() != type) {
      throw error("inputShapeInfo gives input '{}' as {}, but the model declares element type {}",
                  vi.name(), given->second.toString(), dataTypeName(type));
    }
    return given->second;
  }
  if (type == DataType::UNDEFINED) {
    throw error(
        "input '{}' has no element type in the model; give it with "
        "OnnxImportOptions::inputShapeInfo",
        vi.name());
  }
  if (!tt.has_shape()) {
    throw error(
        "input '{}' has no shape in the model; give it with OnnxImportOptions::inputShapeInfo",
        vi.name());
  }
  Shape shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (!d.has_dim_value() || d.dim_value() < 0) {
      // PopART's sentence, verbatim (programs compare the whole message): it names the input,
      // its shape and the unknown dimension.
      throw UnwrappedImportError(
          "Input tensor '{}' must be specified in InputShapeInfo, as it has shape {}, which uses "
          "an unknown value '{}'.",
          vi.name(), shapeProtoToString(tt.shape(), ", "), dimProtoToString(d));
    }
    shape.push_back(d.dim_value());
  }
  return TensorInfo(type, shape);
}

// A grouped weight's per-replica value: group 0 of the initializer (the caller checked the shape).
HostTensor firstGroup(const HostTensor& grouped, const Shape& replicaShape) {
  HostTensor one(TensorInfo(grouped.dataType(), replicaShape));
  std::memcpy(one.raw(), grouped.raw(), one.nbytes());
  return one;
}

// Fails once, listing every (op type, domain, opset) the registry lacks with the nodes that use it,
// so that a user sees the whole gap of a model at once rather than one op per attempt.
void checkOpsAreKnown(const onnx::GraphProto& g, const std::map<std::string, int>& opsets) {
  struct Gap {
    int64_t opset = 0;
    std::vector<std::string> nodes;
  };
  std::map<std::pair<std::string, std::string>, Gap> gaps;  // (domain, type)
  // The nodes of the graph and of its subgraphs (If branches, Loop and Scan bodies, Call callees).
  std::function<void(const onnx::GraphProto&, const std::string&)> visit =
      [&](const onnx::GraphProto& graph, const std::string& where) {
        for (int i = 0; i < graph.node_size(); ++i) {
          const onnx::NodeProto& node = graph.node(i);
          const std::string domain = canonicalDomain(node.domain());
          if (domain == kOnnxDomain && node.op_type() == "Constant") continue;
          if (onnximport::isControlFlow(node)) {
            for (const onnx::GraphProto* body : onnximport::subgraphsOf(node)) {
              visit(*body, where + (body->name().empty() ? node.op_type() : body->name()) + "/");
            }
            continue;
          }
          if (OpRegistry::instance().find(domain, node.op_type()) != nullptr) continue;
          if (onnximport::isPopartLstm(domain, node.op_type())) continue;
          Gap& gap = gaps[{domain, node.op_type()}];
          auto v = opsets.find(domain);
          gap.opset = v == opsets.end() ? 0 : v->second;
          gap.nodes.push_back(node.name().empty() ? xtrain::format("{}#{}", where, i)
                                                  : xtrain::format("'{}{}'", where, node.name()));
        }
      };
  visit(g, "");
  if (gaps.empty()) return;
  constexpr size_t kNodesShown = 4;
  std::string list;
  for (const auto& [key, gap] : gaps) {
    const auto& [domain, type] = key;
    list += xtrain::format("\n  {} ({} opset {}): {} node{}", type.empty() ? "<no op_type>" : type,
                           domain, gap.opset, gap.nodes.size(), gap.nodes.size() == 1 ? "" : "s");
    for (size_t k = 0; k < gap.nodes.size() && k < kNodesShown; ++k) {
      list += xtrain::format("{}{}", k == 0 ? " " : ", ", gap.nodes[k]);
    }
    if (gap.nodes.size() > kNodesShown) list += ", ...";
  }
  throw error("the model uses {} operator{} that xtrain does not support:{}", gaps.size(),
              gaps.size() == 1 ? "" : "s", list);
}

// The producer torch.onnx.export names in every model it writes.
constexpr const char* kPyTorchProducer = "pytorch";

BatchNormRunningVariance resolveRunningVariance(BatchNormRunningVariance choice,
                                                const onnx::ModelProto& model) {
  if (choice != BatchNormRunningVariance::Auto) return choice;
  return model.producer_name() == kPyTorchProducer ? BatchNormRunningVariance::PyTorch
                                                   : BatchNormRunningVariance::Onnx;
}

void buildGraph(Graph& graph, const onnx::ModelProto& model, const OnnxImportOptions& options,
                BatchNormRunningVariance runningVariance,
                std::map<TensorId, HostTensor>& groupedValues) {
  const onnx::GraphProto& g = model.graph();
  const auto opsets = onnxutil::opsetImports(model);
  // Graph outputs stay computed by their ops (anchors and losses are read from ops' outputs).
  std::set<TensorId> graphOutputs;
  for (const auto& out : g.output()) graphOutputs.insert(out.name());

  if (g.sparse_initializer_size() > 0) {
    throw error("initializer '{}' is sparse, which xtrain does not support",
                g.sparse_initializer(0).values().name());
  }
  const ModelMetadata metadata =
      options.replicationFactor > 0 ? onnxutil::metadataProps(model) : ModelMetadata{};
  std::set<std::string> initializerNames;
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) throw error("an initializer has no name");
    const std::string what = "initializer '" + init.name() + "'";
    HostTensor value = onnxutil::tensorFromProto(init, what);
    if (auto settings =
            metadata.empty() ? std::nullopt : readVariableSettings(metadata, init.name());
        settings && settings->getGroupCount(options.replicationFactor) > 1) {
      const Shape replicaShape =
          settings->shapeOnReplica(value.shape(), options.replicationFactor, init.name());
      HostTensor first = firstGroup(value, replicaShape);
      groupedValues.emplace(init.name(), std::move(value));
      value = std::move(first);
    }
    const TensorInfo info = value.info();
    const TensorKind kind =
        isFloatingPoint(info.dataType()) ? TensorKind::Variable : TensorKind::Const;
    if (graph.hasTensor(init.name())) throw error("initializer '{}' is defined twice", init.name());
    graph.addTensor(init.name(), info, kind, std::make_shared<HostTensor>(std::move(value)));
    initializerNames.insert(init.name());
  }

  std::set<std::string> streamNames;
  for (const auto& in : g.input()) {
    if (initializerNames.count(in.name()))
      continue;  // an initializer also listed as input (IR < 4)
    if (in.name().empty()) throw error("a graph input has no name");
    if (graph.hasTensor(in.name())) throw error("graph input '{}' is listed twice", in.name());
    graph.addTensor(in.name(), streamInfo(in, options), TensorKind::Stream);
    graph.inputs().push_back(in.name());
    streamNames.insert(in.name());
  }
  for (const auto& [id, info] : options.inputShapeInfo) {
    if (!streamNames.count(id)) {
      throw error(
          "OnnxImportOptions::inputShapeInfo gives a shape for '{}', which is not an input of "
          "the model without initializer (inputs: {})",
          id, graph.inputs());
    }
  }

  // Where each tensor is produced, to tell "missing" from "produced later" (unsorted nodes).
  std::unordered_map<std::string, int> producerIndex;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& out : g.node(i).output()) {
      if (!out.empty()) producerIndex.emplace(out, i);
    }
  }

  onnximport::NodeImporter importer{graph, opsets, options, runningVariance, graphOutputs, {}, 0};
  for (const auto& [name, index] : producerIndex) importer.reserved.insert(name);
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const std::string label = nodeLabel(node, i);
    const std::string domain = canonicalDomain(node.domain());
    for (const auto& in : node.input()) {
      if (in.empty() || graph.hasTensor(in)) continue;
      auto p = producerIndex.find(in);
      if (p != producerIndex.end() && p->second >= i) {
        throw error(
            "{}: input '{}' is produced by a later node, {} (nodes must be topologically "
            "sorted)",
            label, in, nodeLabel(g.node(p->second), p->second));
      }
      throw error("{}: input '{}' is not a graph input, an initializer or the output of any node",
                  label, in);
    }
    const std::vector<TensorId> inputs(node.input().begin(), node.input().end());
    const std::vector<TensorId> outputs(node.output().begin(), node.output().end());
    if (node.op_type() == "Constant" && domain == kOnnxDomain) {
      if (node.output_size() != 1 || node.output(0).empty()) {
        throw error("{}: a Constant node must have exactly one output, it has {}", label,
                    node.output_size());
      }
      onnximport::addConstantNode(graph, node, label, node.output(0));
    } else if (onnximport::isControlFlow(node)) {
      onnximport::importControlFlow(importer, node, label, inputs, outputs, onnximport::Scope{});
    } else {
      onnximport::addNodeOp(importer, node, label, inputs, outputs, node.name());
    }
  }

  for (const auto& out : g.output()) {
    if (!graph.hasTensor(out.name())) {
      throw error(
          "graph output '{}' is not a graph input, an initializer or the output of any node",
          out.name());
    }
    graph.outputs().push_back(out.name());
  }
}

// Whether ONNX's checker would refuse `attr` of `node` (ai.onnx at `version`) although xtrain reads
// it, as PopART does: an attribute a later version of the op declares (Resize-10's nearest_mode,
// which PopART's Builder adds with addNodeAttribute), or one of PopART's own ("__"-prefixed).
bool isPopartAttribute(const onnx::NodeProto& node, const std::string& attr, int version) {
  if (attr.rfind("__", 0) == 0) return true;
  if (!node.domain().empty() && node.domain() != kOnnxDomain) return false;
  const onnx::OpSchema* now = onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
  if (now == nullptr || now->attributes().count(attr)) return false;
  const onnx::OpSchema* latest = onnx::OpSchemaRegistry::Schema(node.op_type(), kMaxOnnxOpset, "");
  return latest != nullptr && latest->attributes().count(attr) != 0;
}

// The model without the attributes isPopartAttribute accepts, for the checker (nothing is copied
// when there are none).
std::optional<onnx::ModelProto> withoutPopartAttributes(const onnx::ModelProto& model) {
  const int version = onnxutil::onnxOpsetOf(model);
  std::optional<onnx::ModelProto> stripped;
  const auto& nodes = model.graph().node();
  for (int n = 0; n < nodes.size(); ++n) {
    for (int a = nodes[n].attribute_size(); a-- > 0;) {
      if (!isPopartAttribute(nodes[n], nodes[n].attribute(a).name(), version)) continue;
      if (!stripped) stripped = model;
      auto* attrs = stripped->mutable_graph()->mutable_node(n)->mutable_attribute();
      attrs->erase(attrs->begin() + a);
    }
  }
  return stripped;
}

// The checker's complaint about the first untyped graph output, if any. It is raised only after the
// graph is built: an op whose output ONNX could not type (ONNX's shape inference failed on it) then
// reports the real fault, e.g. a Reshape's shape with two -1s, rather than its untyped output.
std::optional<std::string> untypedOutputComplaint(const onnx::ModelProto& model) {
  for (const auto& out : model.graph().output()) {
    if (!out.has_type() || out.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      return xtrain::format(
          "the ONNX checker would reject the model: graph output '{}' has no type (ONNX "
          "requires typed graph outputs; xtrain does not: import with "
          "OnnxImportOptions::runChecker = false)",
          out.name());
    }
  }
  return std::nullopt;
}

// Runs ONNX's checker (without PopART's attributes and without untyped graph outputs, which
// untypedOutputComplaint reports). Returns that complaint, for after the graph is built.
std::optional<std::string> runChecks(const onnx::ModelProto& model, bool runChecker) {
  checkOpsets(model);
  onnxutil::registerGraphcoreSchemas();
  if (!runChecker) return std::nullopt;
  std::optional<std::string> untyped = untypedOutputComplaint(model);
  try {
    std::optional<onnx::ModelProto> stripped = withoutPopartAttributes(model);
    if (untyped) {
      if (!stripped) stripped = model;
      auto* outs = stripped->mutable_graph()->mutable_output();
      for (int i = outs->size(); i-- > 0;) {
        const auto& t = outs->Get(i).type();
        if (!outs->Get(i).has_type() || t.value_case() == onnx::TypeProto::VALUE_NOT_SET) {
          outs->erase(outs->begin() + i);
        }
      }
    }
    // PopART's unconditional Abort has neither inputs nor outputs, which ONNX's checker (since
    // ONNX 1.13) refuses for any node: the checker does not see it (it reads and writes nothing;
    // the import checks its attributes).
    const auto& nodes = model.graph().node();
    for (int n = nodes.size(); n-- > 0;) {
      if (nodes[n].op_type() != "Abort" || nodes[n].domain() != kGraphcoreDomain ||
          nodes[n].input_size() != 0 || nodes[n].output_size() != 0) {
        continue;
      }
      if (!stripped) stripped = model;
      auto* kept = stripped->mutable_graph()->mutable_node();
      kept->erase(kept->begin() + n);
    }
    onnx::checker::check_model(stripped ? *stripped : model);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw error("the ONNX checker rejected the model: {}", msg);
  }
  return untyped;
}

}  // namespace

namespace onnximport {

void addConstantNode(Graph& graph, const onnx::NodeProto& node, const std::string& label,
                     const TensorId& output) {
  if (node.output_size() != 1 || node.output(0).empty()) {
    throw error("{}: a Constant node must have exactly one output, it has {}", label,
                node.output_size());
  }
  // Attributes named "__..." are annotations (PopART's __ipu_number, ...), not the value: a
  // constant lives wherever its readers need it.
  std::vector<const onnx::AttributeProto*> values;
  for (const auto& attr : node.attribute()) {
    if (attr.name().rfind("__", 0) != 0) values.push_back(&attr);
  }
  if (values.size() != 1) {
    throw error(
        "{}: a Constant node must have exactly one attribute (value, value_float, ...), it has {}",
        label, values.size());
  }
  const auto& a = *values[0];
  const std::string what = label + " attribute '" + a.name() + "'";
  HostTensor value;
  if (a.name() == "value") {
    value = onnxutil::tensorFromProto(a.t(), what);
  } else if (a.name() == "value_float") {
    value = HostTensor::scalar(a.f());
  } else if (a.name() == "value_floats") {
    value = HostTensor::fromVector<float>({a.floats_size()},
                                          std::vector<float>(a.floats().begin(), a.floats().end()));
  } else if (a.name() == "value_int") {
    value = HostTensor::fromVector<int64_t>({}, {static_cast<int64_t>(a.i())});
  } else if (a.name() == "value_ints") {
    value = HostTensor::fromVector<int64_t>({a.ints_size()},
                                            std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  } else if (a.name() == "sparse_value") {
    // PopART's sentence, verbatim (programs compare the whole message).
    throw UnwrappedImportError("The Constant op attribute 'sparse_value' is not supported.");
  } else {
    throw error(
        "{}: Constant attribute '{}' is not supported (supported: value, value_float, "
        "value_floats, value_int, value_ints)",
        label, a.name());
  }
  const TensorInfo info = value.info();
  if (graph.hasTensor(output)) {
    throw error("{}: output '{}' is already defined elsewhere (each tensor has one producer)",
                label, node.output(0));
  }
  graph.addTensor(output, info, TensorKind::Const, std::make_shared<HostTensor>(std::move(value)));
}

void addNodeOp(NodeImporter& imp, const onnx::NodeProto& node, const std::string& label,
               std::vector<TensorId> inputs, std::vector<TensorId> outputs,
               const std::string& name) {
  const std::string domain = canonicalDomain(node.domain());
  OpSpec spec;
  spec.type = node.op_type();
  spec.domain = domain;
  spec.numOutputs = static_cast<int>(outputs.size());
  spec.inputs = std::move(inputs);
  spec.outputs = std::move(outputs);
  spec.attrs = convertAttributes(node, label);
  spec.placement = takePlacement(spec.attrs, label);  // __ipu_number, __pipeline_stage, ...
  spec.recomputeType = takeRecomputeType(spec.attrs, label);
  if (spec.type == "BatchNormalization" && domain == kOnnxDomain) {
    spec.attrs.set(
        "running_variance",
        std::string(imp.runningVariance == BatchNormRunningVariance::PyTorch ? "unbiased"
                                                                             : "population"));
  }
  spec.name = name;
  spec.phase = Phase::Forward;
  auto v = imp.opsets.find(domain);
  spec.opset = v == imp.opsets.end() ? 0 : v->second;
  if (domain == kOnnxDomain && spec.opset == 0) {
    throw error("{}: the model imports no ai.onnx opset (opset_import is missing it)", label);
  }
  if (isPopartLstm(domain, spec.type)) {
    importPopartLstm(imp.graph, spec, label);
    return;
  }
  if (isNonSpatialBatchNorm(domain, spec.type, spec.attrs)) {
    importNonSpatialBatchNorm(imp.graph, spec, label);
    return;
  }
  const OpId added = imp.graph.addOp(std::move(spec)).id;
  foldIfConstant(imp.graph, added, imp.options.evaluateConstants, imp.keep);
}

}  // namespace onnximport

std::vector<DeclaredInput> declaredInputs(const std::string& modelPathOrBytes) {
  const onnxutil::ModelSource src = onnxutil::loadModelSource(modelPathOrBytes);
  const onnx::ModelProto model = onnxutil::parseModel(src);
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  std::vector<DeclaredInput> inputs;
  for (const auto& vi : g.input()) {
    if (initializers.count(vi.name())) continue;
    DeclaredInput in;
    in.id = vi.name();
    if (vi.has_type() && vi.type().has_tensor_type()) {
      const auto& tt = vi.type().tensor_type();
      if (tt.elem_type() != 0) {
        try {
          in.type = dataTypeFromOnnx(tt.elem_type());
        } catch (const error&) {
          throw error("{}: input '{}' has ONNX element type {}, which xtrain does not support",
                      src.description, vi.name(), tt.elem_type());
        }
      }
      in.hasShape = tt.has_shape();
      for (const auto& d : tt.shape().dim()) {
        const bool known = d.has_dim_value() && d.dim_value() >= 0;
        in.dims.push_back(known ? d.dim_value() : -1);
        in.dimParams.push_back(known ? std::string() : d.dim_param());
      }
    }
    inputs.push_back(std::move(in));
  }
  return inputs;
}

std::map<TensorId, HostTensor> readOnnxInitializers(const std::string& modelPathOrBytes) {
  const onnxutil::ModelSource src = onnxutil::loadModelSource(modelPathOrBytes);
  const onnx::ModelProto model = onnxutil::parseModel(src);
  std::map<TensorId, HostTensor> values;
  try {
    for (const auto& init : model.graph().initializer()) {
      if (init.name().empty()) throw error("an initializer has no name");
      HostTensor value = onnxutil::tensorFromProto(init, "initializer '" + init.name() + "'");
      if (!values.emplace(init.name(), std::move(value)).second) {
        throw error("initializer '{}' is defined twice", init.name());
      }
    }
  } catch (const internal_error&) {
    throw;
  } catch (const error& e) {
    throw error("reading the initializers of {}: {}", src.description, e.what());
  }
  return values;
}

void checkOnnxModel(const std::string& modelPathOrBytes) {
  const onnxutil::ModelSource src = onnxutil::loadModelSource(modelPathOrBytes);
  const onnx::ModelProto model = onnxutil::parseModel(src);
  try {
    runChecks(model, true);
  } catch (const internal_error&) {
    throw;
  } catch (const error& e) {
    throw error("checking {}: {}", src.description, e.what());
  }
}

BatchNormRunningVariance parseBatchNormRunningVariance(const std::string& text,
                                                       const std::string& what) {
  for (auto v : {BatchNormRunningVariance::Onnx, BatchNormRunningVariance::PyTorch,
                 BatchNormRunningVariance::Auto}) {
    if (text == batchNormRunningVarianceName(v)) return v;
  }
  throw error(
      "{} = \"{}\" is not a BatchNormalization running-variance convention: expected \"onnx\" "
      "(the population variance, as ONNX defines it), \"pytorch\" (the unbiased variance, as "
      "PyTorch keeps it) or \"auto\" (PyTorch's when the model's producer is pytorch)",
      what, text);
}

const char* batchNormRunningVarianceName(BatchNormRunningVariance v) {
  switch (v) {
    case BatchNormRunningVariance::Onnx: return "onnx";
    case BatchNormRunningVariance::PyTorch: return "pytorch";
    case BatchNormRunningVariance::Auto: return "auto";
  }
  return "?";
}

OnnxModel importOnnxModel(const std::string& modelPathOrBytes, const OnnxImportOptions& options) {
  onnxutil::ModelSource src = onnxutil::loadModelSource(modelPathOrBytes);
  const onnx::ModelProto model = onnxutil::parseModel(src);
  const std::string& what = src.description;

  OnnxModel out;
  out.graph = std::make_unique<Graph>();
  try {
    // Missing ops first: ONNX's checker would report a custom op whose library is not loaded only
    // indirectly (an untyped graph output downstream of it).
    checkOpsets(model);
    checkOpsAreKnown(model.graph(), onnxutil::opsetImports(model));
    const std::optional<std::string> untyped = runChecks(model, options.runChecker);
    out.onnxOpset = onnxutil::onnxOpsetOf(model);
    if (out.onnxOpset != 0) out.graph->setOnnxOpset(out.onnxOpset);
    // The replicas the graph is for: the session's, else the model's embedded factor (0: unknown),
    // which sizes the replicated collectives over CommGroup All.
    out.graph->setReplicationFactor(
        options.replicationFactor > 0
            ? options.replicationFactor
            : readReplicationFactor(onnxutil::metadataProps(model)).value_or(0));
    out.producerName = model.producer_name();
    out.batchNormRunningVariance = resolveRunningVariance(options.batchNormRunningVariance, model);
    buildGraph(*out.graph, model, options, out.batchNormRunningVariance, out.groupedValues);
    if (untyped) throw error("{}", *untyped);
  } catch (const internal_error&) {
    throw;
  } catch (const popart_worded_error& e) {
    throw popart_worded_error(e.popartMessage(),
                              xtrain::format("importing {}: {}", what, e.what()));
  } catch (const UnwrappedImportError& e) {
    throw error("{}", e.what());
  } catch (const error& e) {
    throw error("importing {}: {}", what, e.what());
  }
  out.metadata = onnxutil::metadataProps(model);
  out.bytes = std::move(src.bytes);
  return out;
}

}  // namespace xtrain::ir
