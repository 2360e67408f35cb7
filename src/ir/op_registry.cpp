#include "ir/op_registry.hpp"

#include <algorithm>

#include "common/check.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {

void ShapeContext::requireFloatOrHalf(size_t i, const char* name) const {
  const TensorInfo& t = input(i);
  if (t.dataType() == DataType::FLOAT || t.dataType() == DataType::FLOAT16) return;
  if (name != nullptr) {
    fail("input {} ({}) is {}; only FLOAT and FLOAT16 are supported", i, name, t.toString());
  }
  fail("input {} is {}; only FLOAT and FLOAT16 are supported", i, t.toString());
}

void ShapeContext::requireFloatOrHalfInputs() const {
  for (size_t i = 0; i < numInputs(); ++i) {
    if (hasInput(i)) requireFloatOrHalf(i);
  }
}

const TensorInfo& ShapeContext::input(size_t i) const {
  if (!op_.hasInput(i)) fail("input {} is required but absent", i);
  return graph_.tensor(op_.inputs[i]).info;
}

const HostTensor* ShapeContext::constValue(size_t i) const {
  if (!op_.hasInput(i)) return nullptr;
  const Tensor& t = graph_.tensor(op_.inputs[i]);
  if (t.kind != TensorKind::Const || !t.value) return nullptr;
  return t.value.get();
}

GradContext::GradContext(Graph& graph, const Op& op, std::vector<TensorId> gradOuts,
                         std::vector<bool> needsGrad)
    : graph_(graph),
      op_(op),
      gradOuts_(std::move(gradOuts)),
      needsGrad_(std::move(needsGrad)),
      gradIns_(op.inputs.size()) {}

const TensorInfo& GradContext::inputInfo(size_t i) const {
  return graph_.tensor(op_.inputs.at(i)).info;
}
const TensorInfo& GradContext::outputInfo(size_t i) const {
  return graph_.tensor(op_.outputs.at(i)).info;
}

TensorId GradContext::gradOutOrZeros(size_t i) {
  if (!gradOuts_.at(i).empty()) return gradOuts_[i];
  HostTensor zeros(outputInfo(i));
  return constant(std::move(zeros), op_.outputs[i] + "_zero_grad");
}

void GradContext::setGradIn(size_t i, const TensorId& g) {
  XT_CHECK_LT(i, gradIns_.size(), "{}", op_.describe());
  gradIns_[i] = g;
}

TensorId GradContext::emit(const std::string& type, std::vector<TensorId> inputs, Attributes attrs,
                           const std::string& domain) {
  return emitMulti(type, std::move(inputs), 1, std::move(attrs), domain).at(0);
}

std::vector<TensorId> GradContext::emitMulti(const std::string& type, std::vector<TensorId> inputs,
                                             int numOutputs, Attributes attrs,
                                             const std::string& domain) {
  OpSpec spec;
  spec.type = type;
  spec.domain = domain;
  spec.inputs = std::move(inputs);
  spec.numOutputs = numOutputs;
  spec.attrs = std::move(attrs);
  spec.phase = Phase::Backward;
  spec.name = op_.name.empty() ? std::string() : op_.name + "/grad/" + type;
  const Op& o = graph_.addOp(std::move(spec));
  return o.outputs;
}

TensorId GradContext::constant(HostTensor value, const std::string& nameHint) {
  TensorId id = graph_.uniqueId(nameHint);
  const TensorInfo info = value.info();
  graph_.addTensor(id, info, TensorKind::Const, std::make_shared<HostTensor>(std::move(value)));
  return id;
}

TensorId GradContext::scalar(float v, DataType type) {
  HostTensor t = HostTensor::scalar(v);
  if (type != DataType::FLOAT) t = t.castTo(type);
  return constant(std::move(t), "scalar");
}

TensorId GradContext::reshapeTo(const TensorId& x, const Shape& shape) {
  if (graph_.tensor(x).info.shape() == shape) return x;
  Attributes a;
  a.set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
  a.set("allowzero", int64_t{1});
  return emit("Reshape", {x}, std::move(a), kOnnxDomain);
}

TensorId GradContext::reduceToShape(const TensorId& grad, const Shape& target) {
  const Shape& have = graph_.tensor(grad).info.shape();
  if (have == target) return grad;
  Attributes a;
  a.set("shape", std::vector<int64_t>(target.begin(), target.end()));
  return emit("ReduceSumToShape", {grad}, std::move(a));
}

OpRegistry& OpRegistry::instance() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::add(OpDef def) {
  XT_CHECK(def.infer != nullptr, "op {} registered without shape inference", def.type);
  XT_CHECK(find(def.domain, def.type) == nullptr, "op {}::{} registered twice", def.domain,
           def.type);
  defs_.push_back(std::move(def));
}

const OpDef* OpRegistry::find(const std::string& domain, const std::string& type) const {
  const std::string d = domain.empty() ? kOnnxDomain : domain;
  for (const auto& def : defs_) {
    if (def.type == type && def.domain == d) return &def;
  }
  return nullptr;
}

const OpDef& OpRegistry::get(const Op& op) const {
  if (const OpDef* def = find(op.domain, op.type)) return *def;
  throw error("unsupported op: type '{}', domain '{}', opset {}, node '{}' (xtrain has no such op)",
              op.type, op.domain, op.opset, op.name);
}

std::vector<std::string> OpRegistry::knownOps() const {
  std::vector<std::string> names;
  for (const auto& def : defs_) names.push_back(def.domain + "::" + def.type);
  std::sort(names.begin(), names.end());
  return names;
}

Shape broadcastShapes(const ShapeContext& ctx, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      // PopART's programs match on its words, which end the message.
      auto frame = [](const Shape& s) {
        std::string f;
        for (int64_t d : s) f += (f.empty() ? "" : ", ") + std::to_string(d);
        return "[" + f + "]";
      };
      ctx.fail(
          "shapes {} and {} cannot be broadcast together: output dimension {} would be {} and {} "
          "(corresponding dimensions must have the same value or one of them must be 1); np "
          "broadcasting failed on '{}', frames {} and {} are not aligned",
          shapeToString(a), shapeToString(b), i, da, db, popartOpName(ctx.op()), frame(a),
          frame(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalizeAxis(const ShapeContext& ctx, int64_t axis, int64_t rank) {
  const int64_t k = axis < 0 ? axis + rank : axis;
  if (k < 0 || k >= std::max<int64_t>(rank, 1)) {
    ctx.fail("axis {} is out of range for rank {}", axis, rank);
  }
  return k;
}

const Tensor* constInputTensor(const Op& op, const Graph& graph, size_t index,
                               const std::string& usedAs) {
  if (!op.hasInput(index)) return nullptr;
  const Tensor& t = graph.tensor(op.inputs[index]);
  if (t.kind != TensorKind::Const || !t.value) {
    throw error(
        "{}: input {} ('{}', used as '{}') is not a constant; xtrain needs its value at compile "
        "time, so it must be of type Constant",
        op.describe(), index, t.id, usedAs);
  }
  return &t;
}

void moveConstInputToAttr(Op& op, const Graph& graph, size_t index, const std::string& attrName) {
  const Tensor* input = constInputTensor(op, graph, index, attrName);
  if (input == nullptr) return;
  const Tensor& t = *input;
  std::vector<int64_t> values;
  values.reserve(static_cast<size_t>(t.value->nelms()));
  // Integers are read exactly: INT64_MAX ("to the end" in Slice) does not survive a trip through
  // double.
  const DataType type = t.value->dataType();
  for (int64_t i = 0; i < t.value->nelms(); ++i) {
    if (type == DataType::INT64)
      values.push_back(t.value->data<int64_t>()[i]);
    else if (type == DataType::INT32)
      values.push_back(t.value->data<int32_t>()[i]);
    else
      values.push_back(static_cast<int64_t>(t.value->getAsDouble(i)));
  }
  op.attrs.set(attrName, std::move(values));
  op.inputs[index].clear();
}

}  // namespace xtrain::ir
