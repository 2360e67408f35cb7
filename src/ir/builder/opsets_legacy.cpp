// The ai.onnx opsets 6 to 10 of the Builder (xtrain/builder_opsets_legacy.hpp): the methods whose
// ONNX form differs from opset 11's. Everything else is opset 11's method, which writes the same
// node at these versions (BuilderImpl::emitNode refuses an op ONNX did not have yet).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "ir/builder/builder_impl.hpp"
#include "ir/builder/window_checks.hpp"
#include "xtrain/builder_opsets_legacy.hpp"

namespace xtrain {

namespace {

void checkChoice(const char* method, const char* attr, const std::string& value,
                 std::initializer_list<const char*> choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return;
  std::vector<std::string> names(choices.begin(), choices.end());
  throw error("Builder: {}: {} '{}' is not one of {}", method, attr, value, names);
}

void checkOutputCount(const char* method, int version, unsigned n, unsigned max) {
  if (n < 1 || n > max) {
    throw error("Builder: {} (opset {}) has an invalid number of outputs: {} (it has 1 to {})",
                method, version, n, max);
  }
}

}  // namespace

#define XT_OPSET(v)                          \
  AiOnnxOpset##v Builder::aiOnnxOpset##v() { \
    impl_->requireOpset("", v);              \
    return AiOnnxOpset##v(impl_.get());      \
  }
XT_OPSET(6)
XT_OPSET(7)
XT_OPSET(8)
XT_OPSET(9)
XT_OPSET(10)
#undef XT_OPSET

std::vector<TensorId> BuilderImpl::resizeInputs(const std::vector<TensorId>& args,
                                                size_t scalesIndex, const std::string& dc) {
  std::vector<TensorId> inputs = args;
  auto nelms = [this](const std::vector<TensorId>& in, size_t i) -> int64_t {
    if (i >= in.size() || in[i].empty()) return 0;
    const onnx::TensorProto* t = constantValue(in[i]);
    return t == nullptr ? -1 : ir::onnxutil::tensorProtoInfo(*t, in[i]).nelms();
  };
  if (nelms(inputs, scalesIndex) > 0 && nelms(inputs, scalesIndex + 1) > 0) {
    // PopART's message, word for word (its tests compare it).
    throw error(
        "Resize op has inputs for `sizes` and `scales`. Only one of these tensors should be "
        "present. If `sizes` is needed, please pass an empty string as the name of `scales` in "
        "the input list ( resize([X, roi, '', sizes]) ). If the proto is not generated from the "
        "PopART Builder, please confirm that only one of the two tensors shall have data.");
  }
  // A constant of `from` at input i becomes one of `to`.
  auto convert = [&](size_t i, int from, DataType to, const char* name) {
    if (i >= inputs.size() || inputs[i].empty()) return;
    const onnx::TensorProto* t = constantValue(inputs[i]);
    if (t == nullptr || t->data_type() != from) return;
    const HostTensor v = ir::onnxutil::tensorFromProto(*t, inputs[i]).castTo(to);
    inputs[i] = constant(v.raw(), v.info(), (dc.empty() ? "resize" : dc) + "/" + name);
  };
  convert(scalesIndex, onnx::TensorProto::FLOAT16, DataType::FLOAT, "scales");
  // ONNX takes INT64 sizes only, and reads an empty sizes input as sizes of rank 0 (PopART: sizes
  // absent); INT32 sizes become INT64, an empty constant is left out.
  convert(scalesIndex + 1, onnx::TensorProto::INT32, DataType::INT64, "sizes");
  if (inputs.size() == scalesIndex + 2 && nelms(inputs, scalesIndex + 1) == 0) inputs.pop_back();
  return inputs;
}

// ---- Opset 10
// ------------------------------------------------------------------------------------

TensorId AiOnnxOpset10::clip(const std::vector<TensorId>& args, float max, float min,
                             const std::string& dc) {
  return impl_->node("clip", "Clip", args, 1, 1, 1, {{"max", max}, {"min", min}}, dc)[0];
}

TensorId AiOnnxOpset10::pad(const std::vector<TensorId>& args, const std::vector<int64_t>& pads,
                            const std::string& mode, float value, const std::string& dc) {
  checkChoice("pad", "mode", mode, {"constant", "reflect", "edge"});
  BuilderImpl::checkArity("pad", "Pad", args, 1, 1);
  size_t rank = 0;
  try {
    rank = impl_->tensorInfo(args[0]).shape().size();
  } catch (const error&) {
    rank = pads.size() / 2;  // unknown shape: the import checks it
  }
  if (pads.size() != 2 * rank) {
    // PopART's words.
    throw error("Padding vector (length {}) doesn't contain 2 entries per input dimension {}",
                pads.size(), rank);
  }
  return impl_->node("pad", "Pad", args, 1, 1, 1,
                     {{"mode", mode}, {"pads", pads}, {"value", value}}, dc)[0];
}

std::vector<TensorId> AiOnnxOpset10::topk(const std::vector<TensorId>& args, int64_t axis,
                                          const std::string& dc) {
  return impl_->node("topk", "TopK", args, 2, 2, 2, {{"axis", axis}}, dc);
}

TensorId AiOnnxOpset10::resize(const std::vector<TensorId>& args, const std::string& mode,
                               const std::string& dc) {
  // ONNX's Resize-10 has nearest and linear; PopART takes cubic at 10 as well.
  checkChoice("resize", "mode", mode, {"nearest", "linear", "cubic"});
  BuilderImpl::checkArity("resize", "Resize", args, 2, 2);
  return impl_->node("resize", "Resize", impl_->resizeInputs(args, 1, dc), 2, 2, 1,
                     {{"mode", mode}}, dc)[0];
}

TensorId AiOnnxOpset10::upsample(const std::vector<TensorId>& args, const std::string& mode,
                                 const std::string& dc) {
  checkChoice("upsample", "mode", mode, {"nearest", "linear"});
  // ONNX's checker refuses the deprecated Upsample from opset 10: the node is a Resize-10, which
  // xtrain reads as PopART does (nearest: "pytorch", as PopART's Upsample; linear: half_pixel).
  return impl_->node("upsample", "Resize", args, 2, 2, 1, {{"mode", mode}}, dc)[0];
}

TensorId AiOnnxOpset10::scatter(const std::vector<TensorId>& args, int64_t axis,
                                const std::string& dc) {
  if (version_ < 9)
    throw error("Builder: scatter is an ai.onnx op from opset 9 (opset {})", version_);
  return impl_->node("scatter", "Scatter", args, 3, 3, 1, {{"axis", axis}}, dc)[0];
}

// ---- Opset 9
// -------------------------------------------------------------------------------------

TensorId AiOnnxOpset9::slice(const std::vector<TensorId>& args, const std::vector<int64_t>& ends,
                             const std::vector<int64_t>& starts, const std::vector<int64_t>& axes,
                             const std::string& dc) {
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size())) {
    throw error(
        "Builder: slice (opset {}) needs starts, ends (and axes when given) of one length; got "
        "starts {}, ends {}, axes {}",
        version_, starts, ends, axes);
  }
  return impl_->node("slice", "Slice", args, 1, 1, 1,
                     {{"axes", BuilderImpl::nonEmpty(axes)}, {"ends", ends}, {"starts", starts}},
                     dc)[0];
}

std::vector<TensorId> AiOnnxOpset9::topk(const std::vector<TensorId>& args, int64_t k, int64_t axis,
                                         const std::string& dc) {
  return impl_->node("topk", "TopK", args, 1, 1, 2, {{"axis", axis}, {"k", k}}, dc);
}

TensorId AiOnnxOpset9::upsample(const std::vector<TensorId>& args, const std::string& mode,
                                const std::string& dc) {
  checkChoice("upsample", "mode", mode, {"nearest", "linear"});
  return impl_->node("upsample", "Upsample", args, 2, 2, 1, {{"mode", mode}}, dc)[0];
}

std::vector<TensorId> AiOnnxOpset9::maxpool(const std::vector<TensorId>& args, unsigned num_outputs,
                                            const std::vector<int64_t>& kernel_shape,
                                            const std::vector<int64_t>& pads, int64_t storage_order,
                                            const std::vector<int64_t>& strides,
                                            const std::string& dc) {
  checkOutputCount("maxpool", version_, num_outputs, 2);
  if (kernel_shape.empty()) throw error("Builder: maxpool needs kernel_shape");
  if (args.size() == 1)
    verifyWindow(*impl_, "maxpool", args[0], {kernel_shape, strides, pads, {}, false});
  return impl_->node("maxpool", "MaxPool", args, 1, 1, num_outputs,
                     {{"kernel_shape", kernel_shape},
                      {"pads", BuilderImpl::nonEmpty(pads)},
                      {"storage_order", storage_order},
                      {"strides", BuilderImpl::nonEmpty(strides)}},
                     dc);
}

TensorId AiOnnxOpset9::averagepool(const std::vector<TensorId>& args,
                                   const std::vector<int64_t>& kernel_shape,
                                   int64_t count_include_pad, const std::vector<int64_t>& pads,
                                   const std::vector<int64_t>& strides, const std::string& dc) {
  if (kernel_shape.empty()) throw error("Builder: averagepool needs kernel_shape");
  if (args.size() == 1)
    verifyWindow(*impl_, "averagepool", args[0], {kernel_shape, strides, pads, {}, false});
  return impl_->node("averagepool", "AveragePool", args, 1, 1, 1,
                     {{"count_include_pad", count_include_pad},
                      {"kernel_shape", kernel_shape},
                      {"pads", BuilderImpl::nonEmpty(pads)},
                      {"strides", BuilderImpl::nonEmpty(strides)}},
                     dc)[0];
}

// ---- Opsets 8 and 7
// ------------------------------------------------------------------------------

std::vector<TensorId> AiOnnxOpset8::batchnormalization(const std::vector<TensorId>& args,
                                                       unsigned num_outputs, float epsilon,
                                                       float momentum, int64_t spatial,
                                                       const std::string& dc) {
  checkOutputCount("batchnormalization", version_, num_outputs, 5);
  return impl_->node("batchnormalization", "BatchNormalization", args, 5, 5, num_outputs,
                     {{"epsilon", epsilon}, {"momentum", momentum}, {"spatial", spatial}}, dc);
}

TensorId AiOnnxOpset8::upsample(const std::vector<TensorId>& args, const std::vector<float>& scales,
                                const std::string& mode, const std::string& dc) {
  checkChoice("upsample", "mode", mode, {"nearest", "linear"});
  return impl_->node("upsample", "Upsample", args, 1, 1, 1, {{"mode", mode}, {"scales", scales}},
                     dc)[0];
}

TensorId AiOnnxOpset7::maxpool(const std::vector<TensorId>& args,
                               const std::vector<int64_t>& kernel_shape,
                               const std::vector<int64_t>& pads,
                               const std::vector<int64_t>& strides, const std::string& dc) {
  if (kernel_shape.empty()) throw error("Builder: maxpool needs kernel_shape");
  if (args.size() == 1)
    verifyWindow(*impl_, "maxpool", args[0], {kernel_shape, strides, pads, {}, false});
  return impl_->node("maxpool", "MaxPool", args, 1, 1, 1,
                     {{"kernel_shape", kernel_shape},
                      {"pads", BuilderImpl::nonEmpty(pads)},
                      {"strides", BuilderImpl::nonEmpty(strides)}},
                     dc)[0];
}

// ---- Opset 6
// -------------------------------------------------------------------------------------

namespace {

// A binary op of opset 6. ONNX-6 broadcasting aligns B with A at `axis` (default: A's last axes);
// the IR broadcasts as numpy does (the last axes), so only that alignment is written.
TensorId binary6(BuilderImpl& impl, const char* method, const char* type,
                 const std::vector<TensorId>& args, std::optional<int64_t> axis, int64_t broadcast,
                 const std::string& dc) {
  BuilderImpl::checkArity(method, type, args, 2, 2);
  if (axis && broadcast != 0) {
    const size_t rankA = impl.tensorInfo(args[0]).shape().size();
    const size_t rankB = impl.tensorInfo(args[1]).shape().size();
    const int64_t trailing = static_cast<int64_t>(rankA) - static_cast<int64_t>(rankB);
    if (*axis != trailing && *axis != trailing - static_cast<int64_t>(rankA)) {
      throw error(
          "Builder: {} (opset 6): axis {} aligns B (rank {}) inside A (rank {}); xtrain "
          "broadcasts B over A's last axes only (axis {})",
          method, *axis, rankB, rankA, trailing);
    }
  }
  return impl.node(method, type, args, 2, 2, 1,
                   {{"axis", BuilderImpl::ifSet(axis)}, {"broadcast", broadcast}}, dc)[0];
}

}  // namespace

#define XT_BINARY6(method, type)                                                                \
  TensorId AiOnnxOpset6::method(const std::vector<TensorId>& args, std::optional<int64_t> axis, \
                                int64_t broadcast, const std::string& dc) {                     \
    return binary6(*impl_, #method, type, args, axis, broadcast, dc);                           \
  }
XT_BINARY6(add, "Add")
XT_BINARY6(sub, "Sub")
XT_BINARY6(mul, "Mul")
XT_BINARY6(div, "Div")
XT_BINARY6(pow, "Pow")
#undef XT_BINARY6

std::vector<TensorId> AiOnnxOpset6::batchnormalization(const std::vector<TensorId>& args,
                                                       unsigned num_outputs, float epsilon,
                                                       int64_t is_test, float momentum,
                                                       int64_t spatial, const std::string& dc) {
  checkOutputCount("batchnormalization", version_, num_outputs, 5);
  return impl_->node(
      "batchnormalization", "BatchNormalization", args, 5, 5, num_outputs,
      {{"epsilon", epsilon}, {"is_test", is_test}, {"momentum", momentum}, {"spatial", spatial}},
      dc);
}

std::vector<TensorId> AiOnnxOpset6::dropout(const std::vector<TensorId>& args, unsigned num_outputs,
                                            int64_t is_test, float ratio, const std::string& dc) {
  checkOutputCount("dropout", version_, num_outputs, 2);
  return impl_->node("dropout", "Dropout", args, 1, 1, num_outputs,
                     {{"is_test", is_test}, {"ratio", ratio}}, dc);
}

TensorId AiOnnxOpset6::gemm(const std::vector<TensorId>& args, float alpha, float beta,
                            int64_t broadcast, int64_t transA, int64_t transB,
                            const std::string& dc) {
  return impl_->node("gemm", "Gemm", args, 3, 3, 1,
                     {{"alpha", alpha},
                      {"beta", beta},
                      {"broadcast", broadcast},
                      {"transA", transA},
                      {"transB", transB}},
                     dc)[0];
}

TensorId AiOnnxOpset6::averagepool(const std::vector<TensorId>& args,
                                   const std::vector<int64_t>& kernel_shape,
                                   const std::vector<int64_t>& pads,
                                   const std::vector<int64_t>& strides, const std::string& dc) {
  if (kernel_shape.empty()) throw error("Builder: averagepool needs kernel_shape");
  if (args.size() == 1)
    verifyWindow(*impl_, "averagepool", args[0], {kernel_shape, strides, pads, {}, false});
  return impl_->node("averagepool", "AveragePool", args, 1, 1, 1,
                     {{"kernel_shape", kernel_shape},
                      {"pads", BuilderImpl::nonEmpty(pads)},
                      {"strides", BuilderImpl::nonEmpty(strides)}},
                     dc)[0];
}

}  // namespace xtrain
