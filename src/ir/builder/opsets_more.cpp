// The ai.onnx op methods beyond the first set (opsets.cpp): elementwise, comparisons, reductions,
// indexing, shapes, recurrent ops and the ops of opsets 12 to 15. Each is one BuilderImpl::node
// call: the node's type, its arity, its outputs and its attributes. The IR's op registry
// (src/ir/ops/) gives the semantics; here only what ONNX's checker and shape inference cannot
// name well (an enumerated string, a one-element tensor) is checked up front.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

namespace {

using Attrs = std::vector<BuilderImpl::NodeAttr>;
constexpr size_t kAny = SIZE_MAX;

void checkChoice(const char* method, const char* attr, const std::string& value,
                 std::initializer_list<const char*> choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return;
  std::vector<std::string> names(choices.begin(), choices.end());
  throw error("Builder: {}: {} '{}' is not one of {}", method, attr, value, names);
}

void checkOutputCount(const char* method, unsigned n, unsigned max) {
  if (n < 1 || n > max) {
    // "has an invalid number of outputs": PopART's words, which its tests look for.
    throw error("Builder: {} has an invalid number of outputs: {} (it has 1 to {})", method, n,
                max);
  }
}

}  // namespace

// ---- Elementwise, no attributes
// ------------------------------------------------------------------

#define XT_PLAIN(Class, method, type, minArgs, maxArgs)                              \
  TensorId Class::method(const std::vector<TensorId>& args, const std::string& dc) { \
    return impl_->node(#method, type, args, minArgs, maxArgs, 1, {}, dc)[0];         \
  }

XT_PLAIN(AiOnnxOpset11, ceil, "Ceil", 1, 1)
XT_PLAIN(AiOnnxOpset11, floor, "Floor", 1, 1)
XT_PLAIN(AiOnnxOpset11, cos, "Cos", 1, 1)
XT_PLAIN(AiOnnxOpset11, sin, "Sin", 1, 1)
XT_PLAIN(AiOnnxOpset11, erf, "Erf", 1, 1)
XT_PLAIN(AiOnnxOpset11, reciprocal, "Reciprocal", 1, 1)
XT_PLAIN(AiOnnxOpset11, sign, "Sign", 1, 1)
XT_PLAIN(AiOnnxOpset11, softplus, "Softplus", 1, 1)
XT_PLAIN(AiOnnxOpset11, softsign, "Softsign", 1, 1)
XT_PLAIN(AiOnnxOpset11, logical_not, "Not", 1, 1)
XT_PLAIN(AiOnnxOpset11, clip, "Clip", 1, 3)
XT_PLAIN(AiOnnxOpset11, logical_and, "And", 2, 2)
XT_PLAIN(AiOnnxOpset11, logical_or, "Or", 2, 2)
XT_PLAIN(AiOnnxOpset11, logical_xor, "Xor", 2, 2)
XT_PLAIN(AiOnnxOpset11, equal, "Equal", 2, 2)
XT_PLAIN(AiOnnxOpset11, greater, "Greater", 2, 2)
XT_PLAIN(AiOnnxOpset11, less, "Less", 2, 2)
XT_PLAIN(AiOnnxOpset11, max, "Max", 1, kAny)
XT_PLAIN(AiOnnxOpset11, min, "Min", 1, kAny)
XT_PLAIN(AiOnnxOpset11, prelu, "PRelu", 2, 2)
XT_PLAIN(AiOnnxOpset11, where, "Where", 3, 3)
XT_PLAIN(AiOnnxOpset11, gathernd, "GatherND", 2, 2)
XT_PLAIN(AiOnnxOpset11, scatternd, "ScatterND", 3, 3)
XT_PLAIN(AiOnnxOpset11, shape, "Shape", 1, 1)
XT_PLAIN(AiOnnxOpset11, size, "Size", 1, 1)
XT_PLAIN(AiOnnxOpset11, expand, "Expand", 2, 2)
XT_PLAIN(AiOnnxOpset11, tile, "Tile", 2, 2)
XT_PLAIN(AiOnnxOpset11, range, "Range", 3, 3)
XT_PLAIN(AiOnnxOpset12, greaterorequal, "GreaterOrEqual", 2, 2)
XT_PLAIN(AiOnnxOpset12, lessorequal, "LessOrEqual", 2, 2)
XT_PLAIN(AiOnnxOpset14, hardswish, "HardSwish", 1, 1)
XT_PLAIN(AiOnnxOpset15, castlike, "CastLike", 2, 2)

#undef XT_PLAIN

// ---- Elementwise with attributes
// -----------------------------------------------------------------

TensorId AiOnnxOpset11::thresholdedrelu(const std::vector<TensorId>& args, float alpha,
                                        const std::string& dc) {
  return impl_->node("thresholdedrelu", "ThresholdedRelu", args, 1, 1, 1, {{"alpha", alpha}},
                     dc)[0];
}

TensorId AiOnnxOpset11::elu(const std::vector<TensorId>& args, float alpha, const std::string& dc) {
  return impl_->node("elu", "Elu", args, 1, 1, 1, {{"alpha", alpha}}, dc)[0];
}

TensorId AiOnnxOpset11::leakyrelu(const std::vector<TensorId>& args, float alpha,
                                  const std::string& dc) {
  return impl_->node("leakyrelu", "LeakyRelu", args, 1, 1, 1, {{"alpha", alpha}}, dc)[0];
}

TensorId AiOnnxOpset11::selu(const std::vector<TensorId>& args, float alpha, float gamma,
                             const std::string& dc) {
  return impl_->node("selu", "Selu", args, 1, 1, 1, {{"alpha", alpha}, {"gamma", gamma}}, dc)[0];
}

TensorId AiOnnxOpset11::hardsigmoid(const std::vector<TensorId>& args, float alpha, float beta,
                                    const std::string& dc) {
  return impl_->node("hardsigmoid", "HardSigmoid", args, 1, 1, 1,
                     {{"alpha", alpha}, {"beta", beta}}, dc)[0];
}

TensorId AiOnnxOpset11::mod(const std::vector<TensorId>& args, int64_t fmod,
                            const std::string& dc) {
  if (fmod != 0 && fmod != 1) throw error("Builder: mod: fmod must be 0 or 1, got {}", fmod);
  return impl_->node("mod", "Mod", args, 2, 2, 1, {{"fmod", fmod}}, dc)[0];
}

TensorId AiOnnxOpset12::celu(const std::vector<TensorId>& args, float alpha,
                             const std::string& dc) {
  return impl_->node("celu", "Celu", args, 1, 1, 1, {{"alpha", alpha}}, dc)[0];
}

TensorId AiOnnxOpset14::trilu(const std::vector<TensorId>& args, int64_t upper,
                              const std::string& dc) {
  if (upper != 0 && upper != 1) throw error("Builder: trilu: upper must be 0 or 1, got {}", upper);
  return impl_->node("trilu", "Trilu", args, 1, 2, 1, {{"upper", upper}}, dc)[0];
}

// ---- Indices and reductions
// ----------------------------------------------------------------------

TensorId AiOnnxOpset11::argmax(const std::vector<TensorId>& args, int64_t axis, int64_t keepdims,
                               const std::string& dc) {
  return impl_->node("argmax", "ArgMax", args, 1, 1, 1, {{"axis", axis}, {"keepdims", keepdims}},
                     dc)[0];
}

TensorId AiOnnxOpset11::argmin(const std::vector<TensorId>& args, int64_t axis, int64_t keepdims,
                               const std::string& dc) {
  return impl_->node("argmin", "ArgMin", args, 1, 1, 1, {{"axis", axis}, {"keepdims", keepdims}},
                     dc)[0];
}

namespace {

// Reductions other than ReduceSum keep axes an attribute up to opset 17 (an input from 18). An
// empty axes list reduces nothing: a reduction of one element is the elementwise `identity` op
// (Abs, Identity, Log, or Mul of x by itself).
TensorId reduceOp(BuilderImpl& impl, const char* method, const std::string& type,
                  const std::string& identity, const std::vector<TensorId>& args,
                  const std::optional<std::vector<int64_t>>& axes, int64_t keepdims,
                  const std::string& dc) {
  if (axes && axes->empty()) {
    BuilderImpl::checkArity(method, type, args, 1, 1);
    const std::vector<TensorId> in =
        identity == "Mul" ? std::vector<TensorId>{args[0], args[0]} : args;
    return impl.node(method, identity, in, in.size(), in.size(), 1, {}, dc)[0];
  }
  return impl.node(method, type, args, 1, 1, 1,
                   {{"axes", BuilderImpl::ifSet(axes)}, {"keepdims", keepdims}}, dc)[0];
}

}  // namespace

#define XT_REDUCE(method, type, identity)                                                    \
  TensorId AiOnnxOpset11::method(const std::vector<TensorId>& args,                          \
                                 std::optional<std::vector<int64_t>> axes, int64_t keepdims, \
                                 const std::string& dc) {                                    \
    return reduceOp(*impl_, #method, type, identity, args, axes, keepdims, dc);              \
  }

XT_REDUCE(reducel1, "ReduceL1", "Abs")
XT_REDUCE(reducel2, "ReduceL2", "Abs")
XT_REDUCE(reducelogsum, "ReduceLogSum", "Log")
XT_REDUCE(reducelogsumexp, "ReduceLogSumExp", "Identity")
XT_REDUCE(reducemax, "ReduceMax", "Identity")
XT_REDUCE(reducemin, "ReduceMin", "Identity")
XT_REDUCE(reduceprod, "ReduceProd", "Identity")
XT_REDUCE(reducesumsquare, "ReduceSumSquare", "Mul")

#undef XT_REDUCE

TensorId AiOnnxOpset11::cumsum(const std::vector<TensorId>& args, int64_t exclusive,
                               int64_t reverse, const std::string& dc) {
  return impl_->node("cumsum", "CumSum", args, 2, 2, 1,
                     {{"exclusive", exclusive}, {"reverse", reverse}}, dc)[0];
}

std::vector<TensorId> AiOnnxOpset11::topk(const std::vector<TensorId>& args, int64_t axis,
                                          int64_t largest, int64_t sorted, const std::string& dc) {
  return impl_->node("topk", "TopK", args, 2, 2, 2,
                     {{"axis", axis}, {"largest", largest}, {"sorted", sorted}}, dc);
}

TensorId AiOnnxOpset11::onehot(const std::vector<TensorId>& args, int64_t axis,
                               const std::string& dc) {
  return impl_->node("onehot", "OneHot", args, 3, 3, 1, {{"axis", axis}}, dc)[0];
}

// ---- Gather and scatter
// --------------------------------------------------------------------------

TensorId AiOnnxOpset11::gatherelements(const std::vector<TensorId>& args, int64_t axis,
                                       const std::string& dc) {
  return impl_->node("gatherelements", "GatherElements", args, 2, 2, 1, {{"axis", axis}}, dc)[0];
}

// ONNX deprecated Scatter at opset 11 (the checker refuses it in a model of opset 11 or later): it
// is ScatterElements under its old name, so that is the node written.
TensorId AiOnnxOpset11::scatter(const std::vector<TensorId>& args, int64_t axis,
                                const std::string& dc) {
  return impl_->node("scatter", "ScatterElements", args, 3, 3, 1, {{"axis", axis}}, dc)[0];
}

TensorId AiOnnxOpset11::scatterelements(const std::vector<TensorId>& args, int64_t axis,
                                        const std::string& dc) {
  return impl_->node("scatterelements", "ScatterElements", args, 3, 3, 1, {{"axis", axis}}, dc)[0];
}

// ---- Shapes
// --------------------------------------------------------------------------------------

TensorId AiOnnxOpset11::constantofshape(const std::vector<TensorId>& args,
                                        const ConstVoidData& value, const std::string& dc) {
  BuilderImpl::checkArity("constantofshape", "ConstantOfShape", args, 1, 1);
  if (value.info.nelms() != 1 || value.data == nullptr) {
    throw error("Builder: constantofshape: value must be a tensor of one element, got {}",
                value.info.toString());
  }
  auto e = impl_->emit("ConstantOfShape", "", args, 1, dc);
  // ONNX's value is a one-element 1-D tensor.
  setTensorAttr(*e.node, "value", value.data, TensorInfo(value.info.dataType(), {1}));
  return e.outputs[0];
}

TensorId AiOnnxOpset11::pad(const std::vector<TensorId>& args, const std::string& mode,
                            const std::string& dc) {
  checkChoice("pad", "mode", mode, {"constant", "reflect", "edge"});
  return impl_->node("pad", "Pad", args, 2, 3, 1, {{"mode", mode}}, dc)[0];
}

TensorId AiOnnxOpset11::resize(const std::vector<TensorId>& args,
                               const std::string& coordinate_transformation_mode,
                               float cubic_coeff_a, int64_t exclude_outside,
                               float extrapolation_value, const std::string& mode,
                               const std::string& nearest_mode, const std::string& dc) {
  checkChoice("resize", "mode", mode, {"nearest", "linear", "cubic"});
  checkChoice("resize", "coordinate_transformation_mode", coordinate_transformation_mode,
              {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  // "pytorch" is PopART's own nearest mode (src/ir/ops/resize_ops.cpp).
  checkChoice("resize", "nearest_mode", nearest_mode,
              {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "pytorch"});
  // Resize 11 needs X, roi and scales; 13 makes roi and scales optional. PopART's way of giving
  // sizes at 11, resize([X, roi, "", sizes]), is written as ONNX-11 says: scales an empty tensor.
  BuilderImpl::checkArity("resize", "Resize", args, version_ >= 13 ? 1 : 3, 4);
  std::vector<TensorId> inputs = impl_->resizeInputs(args, 2, dc);
  if (version_ < 13) {
    for (size_t i = 1; i < std::min<size_t>(inputs.size(), 3); ++i) {
      if (inputs[i].empty()) {
        inputs[i] = impl_->constant(nullptr, TensorInfo(DataType::FLOAT, {0}),
                                    (dc.empty() ? "resize" : dc) + (i == 1 ? "/roi" : "/scales"));
      }
    }
  }
  return impl_->node("resize", "Resize", inputs, version_ >= 13 ? 1 : 3, 4, 1,
                     {{"coordinate_transformation_mode", coordinate_transformation_mode},
                      {"cubic_coeff_a", cubic_coeff_a},
                      {"exclude_outside", exclude_outside},
                      {"extrapolation_value", extrapolation_value},
                      {"mode", mode},
                      {"nearest_mode", nearest_mode}},
                     dc)[0];
}

// ONNX deprecated Upsample at opset 10 (the checker refuses it from then on): Upsample(X, scales)
// is Resize(X, roi = [], scales) with asymmetric coordinates (and, for nearest, PopART's
// "pytorch" mode, which its UpsampleToResize pattern gives Upsample), which is the node written.
TensorId AiOnnxOpset11::upsample(const std::vector<TensorId>& args, const std::string& mode,
                                 const std::string& dc) {
  checkChoice("upsample", "mode", mode, {"nearest", "linear"});
  BuilderImpl::checkArity("upsample", "Upsample", args, 2, 2);
  const TensorId roi =
      impl_->constant(nullptr, TensorInfo(DataType::FLOAT, {0}), dc.empty() ? "roi" : dc + "/roi");
  return impl_->node("upsample", "Resize", {args[0], roi, args[1]}, 3, 3, 1,
                     {{"coordinate_transformation_mode", std::string("asymmetric")},
                      {"mode", mode},
                      {"nearest_mode", std::string("pytorch")}},
                     dc)[0];
}

TensorId AiOnnxOpset15::shape(const std::vector<TensorId>& args, int64_t start,
                              std::optional<int64_t> end, const std::string& dc) {
  return impl_->node("shape", "Shape", args, 1, 1, 1,
                     {{"start", start}, {"end", BuilderImpl::ifSet(end)}}, dc)[0];
}

// ---- Convolution, normalisation, losses
// ------------------------------------------------------------------

TensorId AiOnnxOpset11::convtranspose(const std::vector<TensorId>& args,
                                      const std::vector<int64_t>& dilations, int64_t group,
                                      const std::vector<int64_t>& kernel_shape,
                                      const std::vector<int64_t>& output_padding,
                                      const std::vector<int64_t>& output_shape,
                                      const std::vector<int64_t>& pads,
                                      const std::vector<int64_t>& strides, const std::string& dc) {
  using B = BuilderImpl;
  return impl_->node("convtranspose", "ConvTranspose", args, 2, 3, 1,
                     {{"dilations", B::nonEmpty(dilations)},
                      {"group", group},
                      {"kernel_shape", B::nonEmpty(kernel_shape)},
                      {"output_padding", B::nonEmpty(output_padding)},
                      {"output_shape", B::nonEmpty(output_shape)},
                      {"pads", B::nonEmpty(pads)},
                      {"strides", B::nonEmpty(strides)}},
                     dc)[0];
}

TensorId AiOnnxOpset11::instancenormalization(const std::vector<TensorId>& args, float epsilon,
                                              const std::string& dc) {
  return impl_->node("instancenormalization", "InstanceNormalization", args, 3, 3, 1,
                     {{"epsilon", epsilon}}, dc)[0];
}

TensorId AiOnnxOpset12::einsum(const std::vector<TensorId>& args, const std::string& equation,
                               const std::string& dc) {
  if (equation.empty()) throw error("Builder: einsum needs an equation");
  return impl_->node("einsum", "Einsum", args, 1, kAny, 1, {{"equation", equation}}, dc)[0];
}

TensorId AiOnnxOpset12::negativeloglikelihoodloss(const std::vector<TensorId>& args,
                                                  std::optional<int64_t> ignore_index,
                                                  const std::string& reduction,
                                                  const std::string& dc) {
  checkChoice("negativeloglikelihoodloss", "reduction", reduction, {"none", "sum", "mean"});
  return impl_->node("negativeloglikelihoodloss", "NegativeLogLikelihoodLoss", args, 2, 3, 1,
                     {{"ignore_index", BuilderImpl::ifSet(ignore_index)}, {"reduction", reduction}},
                     dc)[0];
}

// ---- Recurrent
// -----------------------------------------------------------------------------------

namespace {

// GRU, LSTM and RNN share their attributes but for one (linear_before_reset, input_forget).
std::vector<TensorId> recurrent(BuilderImpl& impl, const char* method, const char* type,
                                size_t maxArgs, unsigned maxOutputs,
                                const std::vector<TensorId>& args, unsigned num_outputs,
                                const std::vector<float>& activation_alpha,
                                const std::vector<float>& activation_beta,
                                const std::vector<std::string>& activations,
                                std::optional<float> clip, const std::string& direction,
                                std::optional<int64_t> hidden_size,
                                std::optional<BuilderImpl::NodeAttr> extra, const std::string& dc) {
  checkOutputCount(method, num_outputs, maxOutputs);
  checkChoice(method, "direction", direction, {"forward", "reverse", "bidirectional"});
  // As PopART's Builder: direction only when not "forward", hidden_size only when given (ONNX's
  // shape inference, which needs it, gets R's last dimension from BuilderImpl's inference model),
  // so that addNodeAttribute can set them.
  using Opt = std::optional<BuilderImpl::AttrValue>;
  std::vector<BuilderImpl::NodeAttr> attrs = {
      {"activation_alpha", BuilderImpl::nonEmpty(activation_alpha)},
      {"activation_beta", BuilderImpl::nonEmpty(activation_beta)},
      {"activations", BuilderImpl::nonEmpty(activations)},
      {"clip", BuilderImpl::ifSet(clip)},
      {"direction", direction == "forward" ? Opt() : Opt(direction)},
      {"hidden_size", BuilderImpl::ifSet(hidden_size)}};
  if (extra) attrs.push_back(*extra);
  return impl.node(method, type, args, 3, maxArgs, num_outputs, attrs, dc);
}

}  // namespace

std::vector<TensorId> AiOnnxOpset11::gru(const std::vector<TensorId>& args, unsigned num_outputs,
                                         const std::vector<float>& activation_alpha,
                                         const std::vector<float>& activation_beta,
                                         const std::vector<std::string>& activations,
                                         std::optional<float> clip, const std::string& direction,
                                         std::optional<int64_t> hidden_size,
                                         int64_t linear_before_reset, const std::string& dc) {
  return recurrent(*impl_, "gru", "GRU", 6, 2, args, num_outputs, activation_alpha, activation_beta,
                   activations, clip, direction, hidden_size,
                   BuilderImpl::NodeAttr{"linear_before_reset", linear_before_reset}, dc);
}

std::vector<TensorId> AiOnnxOpset11::lstm(const std::vector<TensorId>& args, unsigned num_outputs,
                                          const std::vector<float>& activation_alpha,
                                          const std::vector<float>& activation_beta,
                                          const std::vector<std::string>& activations,
                                          std::optional<float> clip, const std::string& direction,
                                          std::optional<int64_t> hidden_size, int64_t input_forget,
                                          const std::string& dc) {
  return recurrent(*impl_, "lstm", "LSTM", 8, 3, args, num_outputs, activation_alpha,
                   activation_beta, activations, clip, direction, hidden_size,
                   BuilderImpl::NodeAttr{"input_forget", input_forget}, dc);
}

std::vector<TensorId> AiOnnxOpset11::rnn(const std::vector<TensorId>& args, unsigned num_outputs,
                                         const std::vector<float>& activation_alpha,
                                         const std::vector<float>& activation_beta,
                                         const std::vector<std::string>& activations,
                                         std::optional<float> clip, const std::string& direction,
                                         std::optional<int64_t> hidden_size,
                                         const std::string& dc) {
  return recurrent(*impl_, "rnn", "RNN", 6, 2, args, num_outputs, activation_alpha, activation_beta,
                   activations, clip, direction, hidden_size, std::nullopt, dc);
}

}  // namespace xtrain
