// ONNX schemas of PopART's ai.graphcore Ctc, CtcBeamSearchDecoder and MultiConv, so that the ONNX
// checker accepts Builder models that use them and ONNX shape inference (Builder::getTensorShape)
// sees through them. Semantics: src/ir/ops/ctc_ops.cpp and multiconv_ops.cpp. Registered by
// registerGraphcoreSchemas (graphcore_schemas.cpp).
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <optional>

#include "ir/graph.hpp"
#include "ir/onnx/graphcore_schema_parts.hpp"

namespace xtrain::ir::onnxutil {

namespace {

const std::vector<std::string> kFloatTypes = {"tensor(float)", "tensor(float16)"};
const std::vector<std::string> kLengthTypes = {"tensor(uint32)", "tensor(int32)"};

const onnx::TensorShapeProto* inputShape(onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return nullptr;
  const onnx::TypeProto* t = ctx.getInputType(i);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return nullptr;
  return &t->tensor_type().shape();
}

void setOutput(onnx::InferenceContext& ctx, size_t i, int32_t elemType,
               std::initializer_list<std::optional<int64_t>> dims) {
  auto* tt = ctx.getOutputType(i)->mutable_tensor_type();
  if (elemType != 0) tt->set_elem_type(elemType);
  auto* shape = tt->mutable_shape();
  shape->clear_dim();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (d) dim->set_dim_value(*d);
  }
}

std::optional<int64_t> dimOf(const onnx::TensorShapeProto* s, int i) {
  if (s == nullptr || i >= s->dim_size() || !s->dim(i).has_dim_value()) return std::nullopt;
  return s->dim(i).dim_value();
}

void ctcInference(onnx::InferenceContext& ctx) {
  const int64_t outType = onnx::getAttribute(ctx, "outDataType", 0);
  const auto elem =
      static_cast<int32_t>(outType != 0 ? outType : ctx.getInputType(0)->tensor_type().elem_type());
  const onnx::TensorShapeProto* lp = inputShape(ctx, 0);
  const std::optional<int64_t> n = dimOf(lp, 1);
  if (onnx::getAttribute(ctx, "reduction", 1) == 2) {
    setOutput(ctx, 0, elem, {n});
  } else {
    setOutput(ctx, 0, elem, {});
  }
  if (ctx.getNumOutputs() > 1) setOutput(ctx, 1, elem, {dimOf(lp, 0), n, dimOf(lp, 2)});
}

void beamSearchInference(onnx::InferenceContext& ctx) {
  const onnx::TensorShapeProto* lp = inputShape(ctx, 0);
  const std::optional<int64_t> n = dimOf(lp, 1);
  const int64_t top = onnx::getAttribute(ctx, "top_paths", 1);
  setOutput(ctx, 0, ctx.getInputType(0)->tensor_type().elem_type(), {n, top});
  setOutput(ctx, 1, onnx::TensorProto::UINT32, {n, top});
  setOutput(ctx, 2, onnx::TensorProto::UINT32, {n, top, dimOf(lp, 0)});
}

// Conv i's values of a flattened per-convolution list attribute, starting at `offset`: `count`
// values, or `fallback` when the attribute is absent.
std::vector<int64_t> slice(onnx::InferenceContext& ctx, const char* name, size_t offset,
                           size_t count, int64_t fallback) {
  const onnx::AttributeProto* a = ctx.getAttribute(name);
  if (a == nullptr) return std::vector<int64_t>(count, fallback);
  if (static_cast<size_t>(a->ints_size()) < offset + count) {
    fail_shape_inference("MultiConv: attribute ", name, " has too few values");
  }
  return std::vector<int64_t>(a->ints().begin() + static_cast<int>(offset),
                              a->ints().begin() + static_cast<int>(offset + count));
}

void multiConvInference(onnx::InferenceContext& ctx) {
  size_t nd = 0;  // spatial dimensions of the convolutions before this one
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i) {
    const onnx::TensorShapeProto* x = inputShape(ctx, 3 * i);
    const onnx::TensorShapeProto* w = inputShape(ctx, 3 * i + 1);
    onnx::propagateElemTypeFromInputToOutput(ctx, 3 * i, i);
    if (x == nullptr || w == nullptr) return;  // later offsets are unknown too
    const auto d = static_cast<size_t>(x->dim_size() - 2);
    const auto strides = slice(ctx, "strides", nd, d, 1);
    const auto dilations = slice(ctx, "dilations", nd, d, 1);
    const auto pads = slice(ctx, "pads", 2 * nd, 2 * d, 0);
    auto* out = ctx.getOutputType(i)->mutable_tensor_type()->mutable_shape();
    out->clear_dim();
    *out->add_dim() = x->dim(0);
    *out->add_dim() = w->dim(0);
    for (size_t k = 0; k < d; ++k) {
      auto* dim = out->add_dim();
      const auto xi = dimOf(x, static_cast<int>(k + 2));
      const auto ki = dimOf(w, static_cast<int>(k + 2));
      if (!xi || !ki || strides[k] < 1) continue;
      const int64_t span = *xi + pads[k] + pads[k + d] - (*ki - 1) * dilations[k] - 1;
      if (span >= 0) dim->set_dim_value(span / strides[k] + 1);
    }
    nd += d;
  }
}

void registerCtc() {
  onnx::OpSchema s = graphcoreSchema("Ctc", "Connectionist temporal classification loss.");
  s.Attr("reduction", "ReductionType: 0 Sum, 1 Mean, 2 NoReduction", onnx::AttributeProto::INT,
         static_cast<int64_t>(1))
      .Attr("blank", "the blank class", onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("outDataType", "ONNX element type of the outputs, 0: logProbs' type",
            onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("zeroInfinity", "1: infinite losses and their gradients become 0",
            onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .Input(0, "logProbs", "[T, N, C]", "T")
      .Input(1, "targets", "[N, S]", "Tind")
      .Input(2, "inputLengths", "[N]", "Tind2")
      .Input(3, "targetLengths", "[N]", "Tind3")
      .Output(0, "loss", "[] or [N]", "T1")
      .Output(1, "logProbsGradient", "[T, N, C]", "T1", onnx::OpSchema::Optional)
      .TypeConstraint("T", kFloatTypes, "floating point")
      .TypeConstraint("T1", kFloatTypes, "floating point")
      .TypeConstraint("Tind", kLengthTypes, "targets")
      .TypeConstraint("Tind2", kLengthTypes, "lengths")
      .TypeConstraint("Tind3", kLengthTypes, "lengths")
      .TypeAndShapeInferenceFunction(ctcInference);
  onnx::RegisterSchema(std::move(s));
}

void registerBeamSearch() {
  onnx::OpSchema s = graphcoreSchema("CtcBeamSearchDecoder", "CTC prefix beam search decoder.");
  s.Attr("blank", "the blank class", onnx::AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("beam_width", "prefixes kept per step", onnx::AttributeProto::INT,
            static_cast<int64_t>(100))
      .Attr("top_paths", "decoded sequences returned", onnx::AttributeProto::INT,
            static_cast<int64_t>(1))
      .Input(0, "logProbs", "[T, N, C]", "T")
      .Input(1, "dataLengths", "[N]", "Tind")
      .Output(0, "labelProbs", "[N, top_paths]", "T")
      .Output(1, "labelLengths", "[N, top_paths]", "Tind")
      .Output(2, "decodedLabels", "[N, top_paths, T]", "Tind")
      .TypeConstraint("T", kFloatTypes, "floating point")
      .TypeConstraint("Tind", {"tensor(uint32)"}, "lengths and labels")
      .TypeAndShapeInferenceFunction(beamSearchInference);
  onnx::RegisterSchema(std::move(s));
}

void registerMultiConv() {
  onnx::OpSchema s = graphcoreSchema(
      "MultiConv", "Independent convolutions: inputs data, weights, bias (or \"\") per conv.");
  for (const char* name : {"strides", "pads", "outPads", "dilations", "inDilations"}) {
    s.Attr(name, "per-convolution values, concatenated", onnx::AttributeProto::INTS, false);
  }
  s.Attr("planType", "parallel or serial", onnx::AttributeProto::STRING, false)
      .Attr("perConvReservedTiles", "tiles reserved per convolution", onnx::AttributeProto::INT,
            false)
      .Attr("cycleBackOff", "cycle back-off proportion", onnx::AttributeProto::FLOAT, false)
      .Attr("__available_memory", "available memory proportion per convolution",
            onnx::AttributeProto::FLOATS, false)
      .Attr("__partials_type", "partials type per convolution", onnx::AttributeProto::STRINGS,
            false)
      .Attr("__enable_conv_dithering", "dithering per convolution", onnx::AttributeProto::INTS,
            false)
      .Attr("numConvs", "number of convolutions", onnx::AttributeProto::INT, false)
      .Input(0, "inputs", "data, weights, bias per convolution", "T", onnx::OpSchema::Variadic,
             true, 2)
      .Output(0, "outputs", "one per convolution", "T", onnx::OpSchema::Variadic, true, 1)
      .TypeConstraint("T", kFloatTypes, "floating point")
      .TypeAndShapeInferenceFunction(multiConvInference);
  onnx::RegisterSchema(std::move(s));
}

}  // namespace

void registerCtcAndMultiConvSchemas() {
  registerCtc();
  registerBeamSearch();
  registerMultiConv();
}

}  // namespace xtrain::ir::onnxutil
