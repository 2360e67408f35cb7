// The opset objects' node emitters. Version differences of ai.onnx 11..17 are resolved here, from
// version_.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "ir/builder/builder_impl.hpp"
#include "ir/builder/window_checks.hpp"

namespace xtrain {

namespace {

std::string seqName(const std::string& debugContext, const std::string& what) {
  return debugContext.empty() ? what : debugContext + "/" + what;
}

unsigned checkOutputs(const char* method, unsigned n, unsigned min, unsigned max) {
  if (n < min || n > max) {
    throw error("Builder: {} has {} to {} outputs, asked for {}", method, min, max, n);
  }
  return n;
}

}  // namespace

// ---- Elementwise
// ---------------------------------------------------------------------------------

#define XT_BINARY(method, type)                                                              \
  TensorId AiOnnxOpset11::method(const std::vector<TensorId>& args, const std::string& dc) { \
    BuilderImpl::checkArity(#method, type, args, 2, 2);                                      \
    return impl_->emit1(type, args, dc);                                                     \
  }
#define XT_UNARY(method, type)                                                               \
  TensorId AiOnnxOpset11::method(const std::vector<TensorId>& args, const std::string& dc) { \
    BuilderImpl::checkArity(#method, type, args, 1, 1);                                      \
    return impl_->emit1(type, args, dc);                                                     \
  }

XT_BINARY(add, "Add")
XT_BINARY(sub, "Sub")
XT_BINARY(mul, "Mul")
XT_BINARY(div, "Div")
XT_BINARY(pow, "Pow")
XT_BINARY(matmul, "MatMul")
XT_UNARY(neg, "Neg")
XT_UNARY(exp, "Exp")
XT_UNARY(log, "Log")
XT_UNARY(sqrt, "Sqrt")
XT_UNARY(abs, "Abs")
XT_UNARY(relu, "Relu")
XT_UNARY(sigmoid, "Sigmoid")
XT_UNARY(tanh, "Tanh")
XT_UNARY(identity, "Identity")
XT_UNARY(globalaveragepool, "GlobalAveragePool")
XT_UNARY(globalmaxpool, "GlobalMaxPool")

#undef XT_BINARY
#undef XT_UNARY

TensorId AiOnnxOpset11::sum(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("sum", "Sum", args, 1, SIZE_MAX);
  return impl_->emit1("Sum", args, dc);
}

TensorId AiOnnxOpset11::cast(const std::vector<TensorId>& args, const std::string& to,
                             const std::string& dc) {
  BuilderImpl::checkArity("cast", "Cast", args, 1, 1);
  int onnxType = 0;
  try {
    onnxType = dataTypeToOnnx(dataTypeFromName(to));
  } catch (const error& e) {
    throw error("Builder: cast to '{}': {}", to, e.what());
  }
  auto e = impl_->emit("Cast", "", args, 1, dc);
  setIntAttr(*e.node, "to", onnxType);
  return e.outputs[0];
}

TensorId AiOnnxOpset11::softmax(const std::vector<TensorId>& args, std::optional<int64_t> axis,
                                const std::string& dc) {
  BuilderImpl::checkArity("softmax", "Softmax", args, 1, 1);
  auto e = impl_->emit("Softmax", "", args, 1, dc);
  if (axis) setIntAttr(*e.node, "axis", *axis);
  return e.outputs[0];
}

TensorId AiOnnxOpset11::logsoftmax(const std::vector<TensorId>& args, std::optional<int64_t> axis,
                                   const std::string& dc) {
  BuilderImpl::checkArity("logsoftmax", "LogSoftmax", args, 1, 1);
  auto e = impl_->emit("LogSoftmax", "", args, 1, dc);
  if (axis) setIntAttr(*e.node, "axis", *axis);
  return e.outputs[0];
}

TensorId AiOnnxOpset11::gemm(const std::vector<TensorId>& args, float alpha, float beta,
                             int64_t transA, int64_t transB, const std::string& dc) {
  BuilderImpl::checkArity("gemm", "Gemm", args, 2, 3);
  auto e = impl_->emit("Gemm", "", args, 1, dc);
  setFloatAttr(*e.node, "alpha", alpha);
  setFloatAttr(*e.node, "beta", beta);
  setIntAttr(*e.node, "transA", transA);
  setIntAttr(*e.node, "transB", transB);
  return e.outputs[0];
}

// ---- Shape manipulation
// --------------------------------------------------------------------------

TensorId AiOnnxOpset11::reshape(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("reshape", "Reshape", args, 2, 2);
  return impl_->emit1("Reshape", args, dc);
}

TensorId AiOnnxOpset11::flatten(const std::vector<TensorId>& args, int64_t axis,
                                const std::string& dc) {
  BuilderImpl::checkArity("flatten", "Flatten", args, 1, 1);
  auto e = impl_->emit("Flatten", "", args, 1, dc);
  setIntAttr(*e.node, "axis", axis);
  return e.outputs[0];
}

TensorId AiOnnxOpset11::transpose(const std::vector<TensorId>& args,
                                  const std::vector<int64_t>& perm, const std::string& dc) {
  BuilderImpl::checkArity("transpose", "Transpose", args, 1, 1);
  auto e = impl_->emit("Transpose", "", args, 1, dc);
  if (!perm.empty()) setIntsAttr(*e.node, "perm", perm);
  return e.outputs[0];
}

TensorId AiOnnxOpset11::concat(const std::vector<TensorId>& args, int64_t axis,
                               const std::string& dc) {
  BuilderImpl::checkArity("concat", "Concat", args, 1, SIZE_MAX);
  auto e = impl_->emit("Concat", "", args, 1, dc);
  setIntAttr(*e.node, "axis", axis);
  return e.outputs[0];
}

std::vector<TensorId> AiOnnxOpset11::split(const std::vector<TensorId>& args, unsigned num_outputs,
                                           int64_t axis, const std::vector<int64_t>& split,
                                           const std::string& dc) {
  if (num_outputs < 1) throw error("Builder: split needs num_outputs >= 1");
  if (!split.empty() && split.size() != num_outputs) {
    throw error("Builder: split has {} sizes in split {} but num_outputs {}", split.size(), split,
                num_outputs);
  }
  std::vector<TensorId> inputs = args;
  if (version_ >= 13) {
    BuilderImpl::checkArity("split", "Split", args, 1, 2);
    if (!split.empty()) {
      if (args.size() == 2) throw error("Builder: split got both a split tensor and split sizes");
      inputs.push_back(impl_->constantInt64(split, seqName(dc, "split")));
    }
  } else {
    BuilderImpl::checkArity("split", "Split", args, 1, 1);
  }
  auto e = impl_->emit("Split", "", inputs, num_outputs, dc);
  setIntAttr(*e.node, "axis", axis);
  if (version_ < 13 && !split.empty()) setIntsAttr(*e.node, "split", split);
  return e.outputs;
}

TensorId AiOnnxOpset11::slice(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("slice", "Slice", args, 3, 5);
  return impl_->emit1("Slice", args, dc);
}

TensorId AiOnnxOpset11::slice(const std::vector<TensorId>& args, const std::vector<int64_t>& starts,
                              const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                              const std::vector<int64_t>& steps, const std::string& dc) {
  BuilderImpl::checkArity("slice", "Slice", args, 1, 1);
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size())) {
    throw error(
        "Builder: slice needs starts, ends (and axes, steps when given) of one length; got "
        "starts {}, ends {}, axes {}, steps {}",
        starts, ends, axes, steps);
  }
  std::vector<TensorId> inputs = {args[0], impl_->constantInt64(starts, seqName(dc, "starts")),
                                  impl_->constantInt64(ends, seqName(dc, "ends"))};
  if (!axes.empty() || !steps.empty()) {
    inputs.push_back(axes.empty() ? TensorId() : impl_->constantInt64(axes, seqName(dc, "axes")));
  }
  if (!steps.empty()) inputs.push_back(impl_->constantInt64(steps, seqName(dc, "steps")));
  return impl_->emit1("Slice", inputs, dc);
}

namespace {

// Squeeze/Unsqueeze/ReduceSum: axes as attribute before `inputFrom`, as (constant) input from it.
TensorId axesOp(BuilderImpl& impl, int version, int inputFrom, const char* method,
                const std::string& type, const std::vector<TensorId>& args,
                const std::vector<int64_t>& axes, bool axesRequired,
                std::optional<int64_t> keepdims, const std::string& dc) {
  std::vector<TensorId> inputs = args;
  const bool asInput = version >= inputFrom;
  if (asInput) {
    BuilderImpl::checkArity(method, type, args, 1, 2);
    if (args.size() == 2 && !axes.empty()) {
      throw error("Builder: {} got both an axes tensor and axes {}", method, axes);
    }
    if (!axes.empty()) inputs.push_back(impl.constantInt64(axes, seqName(dc, "axes")));
    if (axesRequired && inputs.size() < 2) throw error("Builder: {} needs axes", method);
  } else {
    BuilderImpl::checkArity(method, type, args, 1, 1);
    if (axesRequired && axes.empty()) throw error("Builder: {} needs axes", method);
  }
  auto e = impl.emit(type, "", inputs, 1, dc);
  if (!asInput && !axes.empty()) setIntsAttr(*e.node, "axes", axes);
  if (keepdims) setIntAttr(*e.node, "keepdims", *keepdims);
  return e.outputs[0];
}

}  // namespace

TensorId AiOnnxOpset11::squeeze(const std::vector<TensorId>& args, const std::vector<int64_t>& axes,
                                const std::string& dc) {
  std::vector<int64_t> explicitAxes = axes;
  if (version_ < 13 && axes.empty() && args.size() == 1 && impl_->hasTensor(args[0])) {
    // ONNX's Squeeze-11 shape inference needs the axes: when the input's shape is known, name its
    // size-1 dimensions (what "no axes" means) so that getTensorShape works on the output.
    try {
      const Shape shape = impl_->tensorInfo(args[0]).shape();
      for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == 1) explicitAxes.push_back(static_cast<int64_t>(i));
      }
    } catch (const error&) {
      explicitAxes.clear();  // unknown shape: leave the axes out
    }
  }
  return axesOp(*impl_, version_, 13, "squeeze", "Squeeze", args, explicitAxes, false, std::nullopt,
                dc);
}

TensorId AiOnnxOpset11::unsqueeze(const std::vector<TensorId>& args,
                                  const std::vector<int64_t>& axes, const std::string& dc) {
  return axesOp(*impl_, version_, 13, "unsqueeze", "Unsqueeze", args, axes, true, std::nullopt, dc);
}

TensorId AiOnnxOpset11::reducesum(const std::vector<TensorId>& args,
                                  const std::vector<int64_t>& axes, int64_t keepdims,
                                  const std::string& dc) {
  return axesOp(*impl_, version_, 13, "reducesum", "ReduceSum", args, axes, false, keepdims, dc);
}

TensorId AiOnnxOpset11::reducemean(const std::vector<TensorId>& args,
                                   const std::vector<int64_t>& axes, int64_t keepdims,
                                   const std::string& dc) {
  // ReduceMean takes axes as an input only from opset 18.
  return axesOp(*impl_, version_, 18, "reducemean", "ReduceMean", args, axes, false, keepdims, dc);
}

TensorId AiOnnxOpset11::gather(const std::vector<TensorId>& args, int64_t axis,
                               const std::string& dc) {
  BuilderImpl::checkArity("gather", "Gather", args, 2, 2);
  auto e = impl_->emit("Gather", "", args, 1, dc);
  setIntAttr(*e.node, "axis", axis);
  return e.outputs[0];
}

// ---- Normalisation, convolution, pooling, dropout
// -------------------------------------------------

std::vector<TensorId> AiOnnxOpset11::batchnormalization(const std::vector<TensorId>& args,
                                                        unsigned num_outputs, float epsilon,
                                                        float momentum, const std::string& dc) {
  BuilderImpl::checkArity("batchnormalization", "BatchNormalization", args, 5, 5);
  if (version_ >= 14) {
    if (num_outputs != 1 && num_outputs != 3) {
      throw error(
          "Builder: batchnormalization (opset {}) has 1 output, or 3 in training; asked for {}",
          version_, num_outputs);
    }
  } else {
    checkOutputs("batchnormalization", num_outputs, 1, 5);
  }
  auto e = impl_->emit("BatchNormalization", "", args, num_outputs, dc);
  setFloatAttr(*e.node, "epsilon", epsilon);
  setFloatAttr(*e.node, "momentum", momentum);
  if (version_ >= 14 && num_outputs > 1) setIntAttr(*e.node, "training_mode", 1);
  return e.outputs;
}

TensorId AiOnnxOpset11::conv(const std::vector<TensorId>& args,
                             const std::vector<int64_t>& dilations, int64_t group,
                             const std::vector<int64_t>& kernel_shape,
                             const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                             const std::string& dc, const std::string& auto_pad) {
  BuilderImpl::checkArity("conv", "Conv", args, 2, 3);
  verifyConv(*impl_, args, {kernel_shape, strides, pads, dilations, false, auto_pad});
  auto e = impl_->emit("Conv", "", args, 1, dc);
  setAutoPadAttr(*e.node, auto_pad);
  if (!dilations.empty()) setIntsAttr(*e.node, "dilations", dilations);
  setIntAttr(*e.node, "group", group);
  if (!kernel_shape.empty()) setIntsAttr(*e.node, "kernel_shape", kernel_shape);
  if (!pads.empty()) setIntsAttr(*e.node, "pads", pads);
  if (!strides.empty()) setIntsAttr(*e.node, "strides", strides);
  return e.outputs[0];
}

std::vector<TensorId> AiOnnxOpset11::maxpool(
    const std::vector<TensorId>& args, unsigned num_outputs,
    const std::vector<int64_t>& kernel_shape, int64_t ceil_mode,
    const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads, int64_t storage_order,
    const std::vector<int64_t>& strides, const std::string& dc, const std::string& auto_pad) {
  BuilderImpl::checkArity("maxpool", "MaxPool", args, 1, 1);
  checkOutputs("maxpool", num_outputs, 1, 2);
  if (kernel_shape.empty()) throw error("Builder: maxpool needs kernel_shape");
  verifyWindow(*impl_, "maxpool", args[0],
               {kernel_shape, strides, pads, dilations, ceil_mode != 0, auto_pad});
  auto e = impl_->emit("MaxPool", "", args, num_outputs, dc);
  setAutoPadAttr(*e.node, auto_pad);
  setIntsAttr(*e.node, "kernel_shape", kernel_shape);
  setIntAttr(*e.node, "ceil_mode", ceil_mode);
  if (!dilations.empty()) setIntsAttr(*e.node, "dilations", dilations);
  if (!pads.empty()) setIntsAttr(*e.node, "pads", pads);
  setIntAttr(*e.node, "storage_order", storage_order);
  if (!strides.empty()) setIntsAttr(*e.node, "strides", strides);
  return e.outputs;
}

TensorId AiOnnxOpset11::averagepool(const std::vector<TensorId>& args,
                                    const std::vector<int64_t>& kernel_shape, int64_t ceil_mode,
                                    int64_t count_include_pad, const std::vector<int64_t>& pads,
                                    const std::vector<int64_t>& strides, const std::string& dc,
                                    const std::string& auto_pad) {
  BuilderImpl::checkArity("averagepool", "AveragePool", args, 1, 1);
  if (kernel_shape.empty()) throw error("Builder: averagepool needs kernel_shape");
  verifyWindow(*impl_, "averagepool", args[0],
               {kernel_shape, strides, pads, {}, ceil_mode != 0, auto_pad});
  auto e = impl_->emit("AveragePool", "", args, 1, dc);
  setAutoPadAttr(*e.node, auto_pad);
  setIntsAttr(*e.node, "kernel_shape", kernel_shape);
  setIntAttr(*e.node, "ceil_mode", ceil_mode);
  setIntAttr(*e.node, "count_include_pad", count_include_pad);
  if (!pads.empty()) setIntsAttr(*e.node, "pads", pads);
  if (!strides.empty()) setIntsAttr(*e.node, "strides", strides);
  return e.outputs[0];
}

std::vector<TensorId> AiOnnxOpset11::dropout(const std::vector<TensorId>& args,
                                             unsigned num_outputs, float ratio,
                                             const std::string& dc) {
  BuilderImpl::checkArity("dropout", "Dropout", args, 1, 1);
  checkOutputs("dropout", num_outputs, 1, 2);
  if (!(ratio >= 0.0f && ratio < 1.0f)) {
    throw error(
        "Builder: dropout ratio {} is out of range. Please use a value in the interval [0,1)",
        ratio);
  }
  if (version_ >= 12) {
    const TensorId r =
        impl_->constant(&ratio, TensorInfo(DataType::FLOAT, {}), seqName(dc, "ratio"));
    return impl_->emit("Dropout", "", {args[0], r}, num_outputs, dc).outputs;
  }
  auto e = impl_->emit("Dropout", "", args, num_outputs, dc);
  setFloatAttr(*e.node, "ratio", ratio);
  return e.outputs;
}

TensorId AiOnnxOpset11::constant(const ConstVoidData& value, const std::string& dc) {
  if (value.data == nullptr && value.info.nbytes() != 0) {
    throw error("Builder: constant: the ConstVoidData for {} has no data", value.info.toString());
  }
  return impl_->constant(value.data, value.info, dc);
}

// ---- Losses and later-opset ops
// ------------------------------------------------------------------

std::vector<TensorId> AiOnnxOpset12::softmaxcrossentropyloss(const std::vector<TensorId>& args,
                                                             unsigned num_outputs,
                                                             std::optional<int64_t> ignore_index,
                                                             const std::string& reduction,
                                                             const std::string& dc) {
  BuilderImpl::checkArity("softmaxcrossentropyloss", "SoftmaxCrossEntropyLoss", args, 2, 3);
  checkOutputs("softmaxcrossentropyloss", num_outputs, 1, 2);
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    throw error(
        "Builder: softmaxcrossentropyloss reduction must be 'none', 'sum' or 'mean', got '{}'",
        reduction);
  }
  auto e = impl_->emit("SoftmaxCrossEntropyLoss", "", args, num_outputs, dc);
  setStringAttr(*e.node, "reduction", reduction);
  if (ignore_index) setIntAttr(*e.node, "ignore_index", *ignore_index);
  return e.outputs;
}

std::vector<TensorId> AiOnnxOpset17::layernormalization(const std::vector<TensorId>& args,
                                                        unsigned num_outputs, int64_t axis,
                                                        float epsilon, int64_t stash_type,
                                                        const std::string& dc) {
  BuilderImpl::checkArity("layernormalization", "LayerNormalization", args, 2, 3);
  checkOutputs("layernormalization", num_outputs, 1, 3);
  auto e = impl_->emit("LayerNormalization", "", args, num_outputs, dc);
  setIntAttr(*e.node, "axis", axis);
  setFloatAttr(*e.node, "epsilon", epsilon);
  setIntAttr(*e.node, "stash_type", stash_type);
  return e.outputs;
}

// ---- ai.graphcore
// --------------------------------------------------------------------------------

TensorId AiGraphcoreOpset1::identityloss(const std::vector<TensorId>& args, ReductionType reduction,
                                         const std::string& dc) {
  BuilderImpl::checkArity("identityloss", "IdentityLoss", args, 1, 1);
  auto e = impl_->emit("IdentityLoss", ir::kGraphcoreDomain, args, 1, dc);
  setIntAttr(*e.node, "reduction", static_cast<int64_t>(reduction));
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1::nllloss(const std::vector<TensorId>& args, ReductionType reduction,
                                    std::optional<int> ignoreIndex, bool inputIsLogProbability,
                                    const std::string& dc) {
  BuilderImpl::checkArity("nllloss", "Nll", args, 2, 2);
  auto e = impl_->emit("Nll", ir::kGraphcoreDomain, args, 1, dc);
  setIntAttr(*e.node, "reduction", static_cast<int64_t>(reduction));
  if (ignoreIndex) setIntAttr(*e.node, "ignoreIndex", *ignoreIndex);
  setIntAttr(*e.node, "inputIsLogProbability", inputIsLogProbability ? 1 : 0);
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1::l1loss(const std::vector<TensorId>& args, float lambda,
                                   ReductionType reduction, const std::string& dc) {
  BuilderImpl::checkArity("l1loss", "L1", args, 1, 1);
  auto e = impl_->emit("L1", ir::kGraphcoreDomain, args, 1, dc);
  setFloatAttr(*e.node, "lambda", lambda);
  setIntAttr(*e.node, "reduction", static_cast<int64_t>(reduction));
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1::gelu(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("gelu", "Gelu", args, 1, 1);
  return impl_->emit1("Gelu", args, dc, ir::kGraphcoreDomain);
}

// ---- ai.graphcore utility ops (semantics: src/ir/ops/graphcore_ops.cpp)

TensorId AiGraphcoreOpset1::detach(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("detach", "Detach", args, 1, 1);
  return impl_->emit1("Detach", args, dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::nop(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("nop", "Nop", args, 1, 1);
  return impl_->emit1("Nop", args, dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::scale(const std::vector<TensorId>& args, float scale,
                                  const std::string& dc) {
  BuilderImpl::checkArity("scale", "Scale", args, 1, 1);
  auto e = impl_->emit("Scale", ir::kGraphcoreDomain, args, 1, dc);
  setFloatAttr(*e.node, "scale", scale);
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1::scaledadd(const std::vector<TensorId>& args, float scale0, float scale1,
                                      const std::string& dc) {
  BuilderImpl::checkArity("scaledadd", "ScaledAdd", args, 2, 4);
  auto e = impl_->emit("ScaledAdd", ir::kGraphcoreDomain, args, 1, dc);
  setFloatAttr(*e.node, "scale0", scale0);
  setFloatAttr(*e.node, "scale1", scale1);
  return e.outputs[0];
}

namespace {

void checkAxesSizes(const char* method, const std::vector<int64_t>& axes,
                    const std::vector<int64_t>& sizes) {
  if (axes.empty() || axes.size() != sizes.size()) {
    throw error("Builder: {} needs one size per axis and at least one axis; got axes {}, sizes {}",
                method, axes, sizes);
  }
}

TensorId dynamicOp(BuilderImpl& impl, const char* method, const char* type, size_t numArgs,
                   const std::vector<TensorId>& args, const std::vector<int64_t>& axes,
                   const std::vector<int64_t>& sizes, std::optional<int64_t> noOverlap,
                   const std::string& dc, size_t maxArgs = 0) {
  BuilderImpl::checkArity(method, type, args, numArgs, std::max(numArgs, maxArgs));
  checkAxesSizes(method, axes, sizes);
  auto e = impl.emit(type, ir::kGraphcoreDomain, args, 1, dc);
  setIntsAttr(*e.node, "axes", axes);
  setIntsAttr(*e.node, "sizes", sizes);
  if (noOverlap) setIntAttr(*e.node, "noOverlap", *noOverlap);
  return e.outputs[0];
}

}  // namespace

TensorId AiGraphcoreOpset1::dynamicslice(const std::vector<TensorId>& args,
                                         const std::vector<int64_t>& axes,
                                         const std::vector<int64_t>& sizes, int64_t noOverlap,
                                         const std::string& dc) {
  // A third input (the tensor to write the slice into, PopART's inplace form) is accepted.
  return dynamicOp(*impl_, "dynamicslice", "DynamicSlice", 2, args, axes, sizes, noOverlap, dc, 3);
}

TensorId AiGraphcoreOpset1::dynamicupdate(const std::vector<TensorId>& args,
                                          const std::vector<int64_t>& axes,
                                          const std::vector<int64_t>& sizes, int64_t noOverlap,
                                          const std::string& dc) {
  return dynamicOp(*impl_, "dynamicupdate", "DynamicUpdate", 3, args, axes, sizes, noOverlap, dc);
}

TensorId AiGraphcoreOpset1::dynamiczero(const std::vector<TensorId>& args,
                                        const std::vector<int64_t>& axes,
                                        const std::vector<int64_t>& sizes, const std::string& dc) {
  return dynamicOp(*impl_, "dynamiczero", "DynamicZero", 2, args, axes, sizes, std::nullopt, dc);
}

TensorId AiGraphcoreOpset1::dynamicadd(const std::vector<TensorId>& args,
                                       const std::vector<int64_t>& axes,
                                       const std::vector<int64_t>& sizes, const std::string& dc) {
  return dynamicOp(*impl_, "dynamicadd", "DynamicAdd", 3, args, axes, sizes, std::nullopt, dc);
}

namespace {

TensorId initOp(BuilderImpl& impl, const std::vector<int64_t>& shape, int64_t data_type,
                int64_t init_type, std::optional<int64_t> batch_axis, const std::string& dc) {
  if (data_type < 0 || data_type >= static_cast<int64_t>(DataType::UNDEFINED) ||
      dataTypeSize(static_cast<DataType>(data_type)) == 0) {
    throw error("Builder: init: data_type {} is not a DataType with a fixed element size",
                data_type);
  }
  if (init_type != 0 && init_type != 1) {
    throw error("Builder: init: init_type {} is not 0 (NoInit) or 1 (Zero)", init_type);
  }
  auto e = impl.emit("Init", ir::kGraphcoreDomain, {}, 1, dc);
  setIntsAttr(*e.node, "shape", shape);
  setIntAttr(*e.node, "data_type", data_type);
  setIntAttr(*e.node, "init_type", init_type);
  if (batch_axis) setIntAttr(*e.node, "batch_axis", *batch_axis);
  return e.outputs[0];
}

}  // namespace

TensorId AiGraphcoreOpset1::init(const std::vector<int64_t>& shape, int64_t data_type,
                                 int64_t init_type, int64_t batch_axis, const std::string& dc) {
  return initOp(*impl_, shape, data_type, init_type, batch_axis, dc);
}

TensorId AiGraphcoreOpset1::init(const std::vector<int64_t>& shape, int64_t data_type,
                                 int64_t init_type, const std::string& dc) {
  return initOp(*impl_, shape, data_type, init_type, std::nullopt, dc);
}

TensorId AiGraphcoreOpset1::printtensor(const std::vector<TensorId>& args, int64_t print_gradient,
                                        const std::string& dc, const std::string& title,
                                        int summariseThreshold, int edgeItems, int maxLineWidth,
                                        int digits, int floatFormat, char separator,
                                        char openBracket, char closeBracket) {
  BuilderImpl::checkArity("printtensor", "PrintTensor", args, 1, 1);
  if (floatFormat < 0 || floatFormat > 3) {
    throw error("Builder: printtensor: floatFormat {} is not 0 auto, 1 fixed, 2 scientific, 3 none",
                floatFormat);
  }
  auto e = impl_->emit("PrintTensor", ir::kGraphcoreDomain, args, 1, dc);
  setIntAttr(*e.node, "print_gradient", print_gradient);
  setStringAttr(*e.node, "title", title.empty() ? args[0] : title);
  setIntAttr(*e.node, "summariseThreshold", summariseThreshold);
  setIntAttr(*e.node, "edgeItems", edgeItems);
  setIntAttr(*e.node, "maxLineWidth", maxLineWidth);
  setIntAttr(*e.node, "digits", digits);
  setIntAttr(*e.node, "floatFormat", floatFormat);
  setStringAttr(*e.node, "separator", std::string(1, separator));
  setStringAttr(*e.node, "openBracket", std::string(1, openBracket));
  setStringAttr(*e.node, "closeBracket", std::string(1, closeBracket));
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1::remainder(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("remainder", "Remainder", args, 2, 2);
  return impl_->emit1("Remainder", args, dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::fmod(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("fmod", "Fmod", args, 2, 2);
  return impl_->emit1("Fmod", args, dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::reverse(const std::vector<TensorId>& args,
                                    const std::vector<int64_t>& dimensions, const std::string& dc) {
  BuilderImpl::checkArity("reverse", "Reverse", args, 1, 1);
  auto e = impl_->emit("Reverse", ir::kGraphcoreDomain, args, 1, dc);
  setIntsAttr(*e.node, "dimensions", dimensions);
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1::round(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("round", "Round", args, 1, 1);
  return impl_->emit1("Round", args, dc, ir::kGraphcoreDomain);
}

void AiGraphcoreOpset1::abort(const std::vector<TensorId>& args, const std::string& dc) {
  BuilderImpl::checkArity("abort", "Abort", args, 0, 1);
  impl_->emit("Abort", ir::kGraphcoreDomain, args, 0, dc);
}

std::vector<TensorId> AiGraphcoreOpset1::groupnormalization(const std::vector<TensorId>& args,
                                                            int64_t num_groups, float epsilon,
                                                            const std::string& dc) {
  BuilderImpl::checkArity("groupnormalization", "GroupNormalization", args, 3, 3);
  if (num_groups < 1) {
    throw error("Builder: groupnormalization needs num_groups >= 1, got {}", num_groups);
  }
  auto e = impl_->emit("GroupNormalization", ir::kGraphcoreDomain, args, 3, dc);
  setIntAttr(*e.node, "num_groups", num_groups);
  setFloatAttr(*e.node, "epsilon", epsilon);
  return e.outputs;
}

// ---- ai.graphcore replicated collectives (attributes: docs/replicated-ops.md)

namespace {

// Local keeps each replica's value: not a reduction, so no all-reduce or reduce-scatter uses it.
void checkReducing(const char* method, CollectiveOperator op) {
  if (op == CollectiveOperator::Local) {
    throw error("Builder: {}: operator Local does not reduce; use identity instead", method);
  }
}

void setGroup(const char* method, onnx::NodeProto& node, const CommGroup& group) {
  if ((group.type == CommGroupType::Consecutive || group.type == CommGroupType::Orthogonal) &&
      group.replicaGroupSize == 0) {
    throw error("Builder: {}: {} needs a positive replicaGroupSize", method, toString(group));
  }
  setIntAttr(node, "commGroupType", static_cast<int64_t>(group.type));
  setIntAttr(node, "commGroupSize", static_cast<int64_t>(group.replicaGroupSize));
}

void setGroup(const char* /*method*/, onnx::NodeProto& node, const ReplicaGrouping& grouping) {
  setIntAttr(node, "replicaGroupingStride", grouping.getStride());
  setIntAttr(node, "replicaGroupingSize", grouping.getGroupSize());
}

// One replicated collective node `type` for Builder method `method`: its reduction operator when
// it reduces (all-reduce, reduce-scatter) and its group, a CommGroup or a ReplicaGrouping.
template <class Group>
TensorId emitCollective(BuilderImpl& impl, const char* method, const char* type,
                        const std::vector<TensorId>& args, std::optional<CollectiveOperator> op,
                        const Group& group, const std::string& dc) {
  BuilderImpl::checkArity(method, type, args, 1, 1);
  if (op) checkReducing(method, *op);
  auto e = impl.emit(type, ir::kGraphcoreDomain, args, 1, dc);
  if (op) setIntAttr(*e.node, "op", static_cast<int64_t>(*op));
  setGroup(method, *e.node, group);
  return e.outputs[0];
}

}  // namespace

TensorId AiGraphcoreOpset1::replicatedallreduce(const std::vector<TensorId>& args,
                                                CollectiveOperator op, const CommGroup& group,
                                                const std::string& dc) {
  return emitCollective(*impl_, "replicatedallreduce", "ReplicatedAllReduce", args, op, group, dc);
}

TensorId AiGraphcoreOpset1::replicatedallreduce(const std::vector<TensorId>& args,
                                                CollectiveOperator op,
                                                const ReplicaGrouping& grouping,
                                                const std::string& dc) {
  return emitCollective(*impl_, "replicatedallreduce", "ReplicatedAllReduce", args, op, grouping,
                        dc);
}

TensorId AiGraphcoreOpset1::replicatedreducescatter(const std::vector<TensorId>& args,
                                                    CollectiveOperator op, const CommGroup& group,
                                                    const std::string& dc) {
  return emitCollective(*impl_, "replicatedreducescatter", "ReplicatedReduceScatter", args, op,
                        group, dc);
}

TensorId AiGraphcoreOpset1::replicatedreducescatter(const std::vector<TensorId>& args,
                                                    CollectiveOperator op,
                                                    const ReplicaGrouping& grouping,
                                                    const std::string& dc) {
  return emitCollective(*impl_, "replicatedreducescatter", "ReplicatedReduceScatter", args, op,
                        grouping, dc);
}

TensorId AiGraphcoreOpset1::replicatedallgather(const std::vector<TensorId>& args,
                                                const CommGroup& group, const std::string& dc) {
  return emitCollective(*impl_, "replicatedallgather", "ReplicatedAllGather", args, std::nullopt,
                        group, dc);
}

TensorId AiGraphcoreOpset1::replicatedallgather(const std::vector<TensorId>& args,
                                                const ReplicaGrouping& grouping,
                                                const std::string& dc) {
  return emitCollective(*impl_, "replicatedallgather", "ReplicatedAllGather", args, std::nullopt,
                        grouping, dc);
}

}  // namespace xtrain
