// ONNX schemas for custom ops: see custom_schemas.hpp. A custom op's nodes are thus checked by the
// ONNX checker like any op (input and output counts), and ONNX shape inference calls the op's own
// shape function.
#include "ir/onnx/custom_schemas.hpp"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <limits>

#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/error.hpp"

namespace xtrain::ir::onnxutil {

namespace {

// The info of a fully known tensor type, else an unset info.
TensorInfo infoOf(const onnx::TypeProto* type) {
  if (type == nullptr || !type->has_tensor_type()) return {};
  const auto& tt = type->tensor_type();
  if (tt.elem_type() == 0 || !tt.has_shape()) return {};
  Shape shape;
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value()) return {};
    shape.push_back(d.dim_value());
  }
  try {
    return TensorInfo(dataTypeFromOnnx(tt.elem_type()), shape);
  } catch (const error&) {
    return {};
  }
}

bool readAttribute(const onnx::AttributeProto& a, Attributes& attrs) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: attrs.set(a.name(), static_cast<int64_t>(a.i())); return true;
    case onnx::AttributeProto::FLOAT: attrs.set(a.name(), a.f()); return true;
    case onnx::AttributeProto::STRING: attrs.set(a.name(), a.s()); return true;
    case onnx::AttributeProto::INTS:
      attrs.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      return true;
    case onnx::AttributeProto::FLOATS:
      attrs.set(a.name(), std::vector<float>(a.floats().begin(), a.floats().end()));
      return true;
    case onnx::AttributeProto::STRINGS:
      attrs.set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
      return true;
    default: return false;
  }
}

void inferCustom(const CustomSchemaSpec& spec, onnx::InferenceContext& ctx) {
  std::vector<TensorInfo> inputs;
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    const onnx::TypeProto* type = ctx.getInputType(i);
    TensorInfo info = infoOf(type);
    // A present input of unknown type or shape: nothing can be inferred.
    if (type != nullptr && !info.isSet()) return;
    inputs.push_back(info);
  }
  Attributes attrs;
  for (const auto& name : spec.attributeNames) {
    const onnx::AttributeProto* a = ctx.getAttribute(name);
    if (a != nullptr && !readAttribute(*a, attrs)) {
      fail_shape_inference("custom op ", spec.domain, "::", spec.type, ": attribute '", name,
                           "' has a type xtrain custom ops do not take");
    }
  }
  std::vector<TensorInfo> outputs;
  try {
    outputs = spec.infer(inputs, attrs);
  } catch (const std::exception& e) {
    fail_shape_inference("custom op ", spec.domain, "::", spec.type, ": ", e.what());
  }
  for (size_t i = 0; i < ctx.getNumOutputs() && i < outputs.size(); ++i) {
    if (!outputs[i].isSet()) continue;
    auto* tt = ctx.getOutputType(i)->mutable_tensor_type();
    tt->set_elem_type(dataTypeToOnnx(outputs[i].dataType()));
    auto* shape = tt->mutable_shape();
    shape->clear_dim();
    for (int64_t d : outputs[i].shape()) shape->add_dim()->set_dim_value(d);
  }
}

}  // namespace

void registerCustomSchema(const CustomSchemaSpec& spec) {
  registerGraphcoreSchemas();  // ONNX's registry is set up before custom domains join it
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  const auto known = ranges.Map();
  auto range = known.find(spec.domain);
  if (range == known.end()) {
    // A custom domain's versions are the custom ops' own: allow every version from 1.
    ranges.AddDomainToVersion(spec.domain, 1, std::numeric_limits<int>::max() / 2);
  } else if (spec.version < range->second.first || spec.version > range->second.second) {
    throw error("custom op {}::{} version {}: ONNX knows domain '{}' with versions {} to {}",
                spec.domain, spec.type, spec.version, spec.domain, range->second.first,
                range->second.second);
  }
  if (onnx::OpSchemaRegistry::Schema(spec.type, std::numeric_limits<int>::max() / 2, spec.domain) !=
      nullptr) {
    throw error("custom op {}::{}: ONNX already has a schema of that name (version {})",
                spec.domain, spec.type, spec.version);
  }
  onnx::OpSchema s;
  s.SetName(spec.type)
      .SetDomain(spec.domain)
      // Since version 1, whatever the op's version: xtrain registers one version of a custom op,
      // and a model importing the domain at an older opset then gets xtrain's own error naming the
      // node and both versions (the op's canonicalize), not an untyped output at the checker.
      .SinceVersion(1)
      .SetLocation(__FILE__, __LINE__)
      .SetDoc("A custom op registered with xtrain::registerCustomOp.")
      .AllowUncheckedAttributes();
  const auto& types = onnx::OpSchema::all_tensor_types();
  if (spec.maxInputs < 0) {
    for (int i = 0; i + 1 < spec.minInputs; ++i) {
      const std::string t = xtrain::format("I{}", i);
      s.Input(i, xtrain::format("input{}", i), "", t, onnx::OpSchema::Single);
      s.TypeConstraint(t, types, "any tensor");
    }
    const int last = spec.minInputs > 0 ? spec.minInputs - 1 : 0;
    s.Input(last, "inputs", "", "V", onnx::OpSchema::Variadic, false, spec.minInputs > 0 ? 1 : 0);
    s.TypeConstraint("V", types, "any tensor");
  } else {
    for (int i = 0; i < spec.maxInputs; ++i) {
      const std::string t = xtrain::format("I{}", i);
      s.Input(i, xtrain::format("input{}", i), "", t,
              i < spec.minInputs ? onnx::OpSchema::Single : onnx::OpSchema::Optional);
      s.TypeConstraint(t, types, "any tensor");
    }
  }
  for (int i = 0; i < spec.numOutputs; ++i) {
    const std::string t = xtrain::format("O{}", i);
    s.Output(i, xtrain::format("output{}", i), "", t);
    s.TypeConstraint(t, types, "any tensor");
  }
  s.TypeAndShapeInferenceFunction([spec](onnx::InferenceContext& ctx) { inferCustom(spec, ctx); });
  try {
    onnx::RegisterSchema(std::move(s));
  } catch (const std::exception& e) {
    throw error("custom op {}::{}: ONNX refused its schema: {}", spec.domain, spec.type, e.what());
  }
}

}  // namespace xtrain::ir::onnxutil
