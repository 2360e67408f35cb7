// Convolution: ONNX Conv and its internal gradients ConvGradInput and ConvGradWeight (oneDNN
// backward-data and backward-weights in the kernels), and ONNX ConvTranspose, which is the same
// machinery with the roles swapped (see the comment above its registration).
//
// Canonical form of Conv, ConvGradInput and ConvGradWeight (set by Conv's canonicalize, copied to
// the grads): kernel_shape (from W when absent), strides, dilations (default 1), pads
// [begin..., end...] (default 0) and group (default 1) are always present; auto_pad is resolved
// into pads against the input's spatial shape and removed. Inputs are [N, C, spatial...] with 1, 2
// or 3 spatial dims.
#include <optional>

#include "ir/op_registry.hpp"
#include "ir/ops/auto_pad.hpp"

namespace xtrain::ir {
namespace {

// Fills the defaults Conv and ConvTranspose share (kernel_shape from W, strides and dilations 1,
// group 1) and returns X's shape; nothing when an input is absent (the input count check reports
// it) or X and W have ranks infer reports.
std::optional<Shape> fillConvDefaults(Op& op, const Graph& graph) {
  if (!op.hasInput(0) || !op.hasInput(1)) return std::nullopt;
  const Shape& x = graph.tensor(op.inputs[0]).info.shape();
  const Shape& w = graph.tensor(op.inputs[1]).info.shape();
  if (x.size() < 3 || w.size() != x.size()) return std::nullopt;
  const size_t nd = x.size() - 2;
  Attributes& a = op.attrs;
  if (!a.has("kernel_shape")) a.set("kernel_shape", Shape(w.begin() + 2, w.end()));
  if (!a.has("strides")) a.set("strides", Shape(nd, 1));
  if (!a.has("dilations")) a.set("dilations", Shape(nd, 1));
  if (!a.has("group")) a.set("group", int64_t{1});
  return x;
}

void canonicalizeConv(Op& op, const Graph& graph) {
  const std::optional<Shape> x = fillConvDefaults(op, graph);
  if (!x) return;
  const size_t nd = x->size() - 2;
  Attributes& a = op.attrs;
  const Shape& kernel = a.getInts("kernel_shape");
  const Shape& strides = a.getInts("strides");
  const Shape& dilations = a.getInts("dilations");
  if (kernel.size() != nd || strides.size() != nd || dilations.size() != nd) {
    return;  // infer reports it
  }
  a.set("pads",
        resolveAutoPad(op, a.getString("auto_pad", "NOTSET"), Shape(x->begin() + 2, x->end()),
                       kernel, strides, dilations, a.getInts("pads", {})));
  a.erase("auto_pad");
}

// Checks that x is [N, C, spatial...] with 1 to 3 spatial dimensions and w has x's rank; returns
// the number of spatial dimensions.
size_t checkConvRanks(const ShapeContext& ctx, const Shape& x, const Shape& w) {
  if (x.size() < 3 || x.size() > 5) {
    ctx.fail("input X {} must be [N, C, spatial...] with 1 to 3 spatial dimensions",
             shapeToString(x));
  }
  if (w.size() != x.size()) {
    ctx.fail("weights W {} must have the rank of X {}", shapeToString(w), shapeToString(x));
  }
  return x.size() - 2;
}

// Checks a convolution of x [N, C, spatial...] with w [M, C/group, k...] and returns the output's
// shape.
Shape convOutputShape(const ShapeContext& ctx, const Shape& x, const Shape& w) {
  const size_t nd = checkConvRanks(ctx, x, w);
  const Attributes& a = ctx.attrs();
  const int64_t group = a.getInt("group", 1);
  const int64_t c = x[1], m = w[0];
  if (group < 1 || c % group != 0 || m % group != 0) {
    ctx.fail(
        "group {} must divide the input channels ({} in X {}) and the output channels ({} in W {})",
        group, c, shapeToString(x), m, shapeToString(w));
  }
  if (w[1] * group != c) {
    ctx.fail("channel mismatch: X {} has {} channels but W {} with group {} expects {}",
             shapeToString(x), c, shapeToString(w), group, w[1] * group);
  }
  const Shape& kernel = a.getInts("kernel_shape");
  const Shape& strides = a.getInts("strides");
  const Shape& dilations = a.getInts("dilations");
  const Shape pads = a.getInts("pads", Shape(2 * nd, 0));
  if (kernel != Shape(w.begin() + 2, w.end())) {
    ctx.fail("kernel_shape {} does not match the spatial dims of W {}", shapeToString(kernel),
             shapeToString(w));
  }
  if (strides.size() != nd || dilations.size() != nd || pads.size() != 2 * nd) {
    ctx.fail("strides {}, dilations {} and pads {} must have {}, {} and {} values for X {}",
             shapeToString(strides), shapeToString(dilations), shapeToString(pads), nd, nd, 2 * nd,
             shapeToString(x));
  }
  Shape y{x[0], m};
  for (size_t i = 0; i < nd; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[i + nd] < 0) {
      ctx.fail("strides {} and dilations {} must be >= 1 and pads {} >= 0", shapeToString(strides),
               shapeToString(dilations), shapeToString(pads));
    }
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t span = x[i + 2] + pads[i] + pads[i + nd] - extent;
    if (span < 0) {
      ctx.fail("the kernel {} (dilations {}) is larger than the padded input X {} (pads {})",
               shapeToString(kernel), shapeToString(dilations), shapeToString(x),
               shapeToString(pads));
    }
    y.push_back(span / strides[i] + 1);
  }
  return y;
}

// The attributes of a convolution in canonical form, copied from the op being differentiated.
Attributes convAttrs(const GradContext& g) {
  Attributes a;
  for (const char* name : {"kernel_shape", "strides", "dilations", "pads", "group"}) {
    a.set(name, g.attrs().all().at(name));
  }
  return a;
}

// The attributes the gradient ops share with the forward op, plus `shape` (the shape they produce).
Attributes gradAttrs(const GradContext& g, const Shape& shape) {
  Attributes a = convAttrs(g);
  a.set("shape", shape);
  return a;
}

// Conv(X, W, B?): Y = X * W (+ B per output channel). Canonical form in the header comment.
XT_REGISTER_OP([] {
  OpDef d{.type = "Conv", .minInputs = 2, .maxInputs = 3};
  d.canonicalize = canonicalizeConv;
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    const Shape y = convOutputShape(ctx, ctx.input(0).shape(), ctx.input(1).shape());
    if (ctx.hasInput(2) && ctx.input(2).shape() != Shape{y[1]}) {
      ctx.fail("bias B {} must be [{}], one value per output channel of W {}",
               shapeToString(ctx.input(2).shape()), y[1], shapeToString(ctx.input(1).shape()));
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), y)};
  };
  d.grad = [](GradContext& g) {
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) {
      g.setGradIn(0,
                  g.emit("ConvGradInput", {gy, g.input(1)}, gradAttrs(g, g.inputInfo(0).shape())));
    }
    const bool bias = g.op().hasInput(2) && g.needsGrad(2);
    if (g.needsGrad(1) || bias) {
      // One backward-weights pass gives both dW and dB; when only B needs a gradient dW is computed
      // and dropped (frozen convolution weights with a trainable bias are rare).
      auto outs = g.emitMulti("ConvGradWeight", {gy, g.input(0)}, bias ? 2 : 1,
                              gradAttrs(g, g.inputInfo(1).shape()));
      if (g.needsGrad(1)) g.setGradIn(1, outs[0]);
      if (bias) g.setGradIn(2, outs[1]);
    }
  };
  return d;
}());

// ConvGradInput(gY, W), internal: dX of Conv for X of shape `shape` (oneDNN backward data).
XT_REGISTER_OP([] {
  OpDef d{.type = "ConvGradInput", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    const Shape& x = ctx.attrs().getInts("shape");
    const Shape y = convOutputShape(ctx, x, ctx.input(1).shape());
    if (ctx.input(0).shape() != y) {
      ctx.fail("gradient {} does not match the convolution output {}", ctx.input(0).toString(),
               shapeToString(y));
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), x)};
  };
  return d;
}());

// ConvGradWeight(gY, X), internal: dW of Conv for W of shape `shape`, and optionally dB (second
// output, [M]) (oneDNN backward weights).
XT_REGISTER_OP([] {
  OpDef d{.type = "ConvGradWeight",
          .domain = kXtrainDomain,
          .minInputs = 2,
          .maxInputs = 2,
          .maxOutputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    const Shape& w = ctx.attrs().getInts("shape");
    const Shape y = convOutputShape(ctx, ctx.input(1).shape(), w);
    if (ctx.input(0).shape() != y) {
      ctx.fail("gradient {} does not match the convolution output {}", ctx.input(0).toString(),
               shapeToString(y));
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), w),
                                   TensorInfo(ctx.input(0).dataType(), {w[0]})};
  };
  return d;
}());

// ConvTranspose's attributes in canonical form (see the comment above its registration): defaults
// filled in, auto_pad and output_shape resolved into pads and output_padding.
void canonicalizeConvTranspose(Op& op, const Graph& graph) {
  const std::optional<Shape> input = fillConvDefaults(op, graph);
  if (!input) return;
  const Shape& x = *input;
  const size_t nd = x.size() - 2;
  Attributes& a = op.attrs;
  if (!a.has("output_padding")) a.set("output_padding", Shape(nd, 0));
  const std::string autoPad = a.getString("auto_pad", "NOTSET");
  a.erase("auto_pad");
  const Shape kernel = a.getInts("kernel_shape");
  const Shape strides = a.getInts("strides");
  const Shape dilations = a.getInts("dilations");
  Shape outputPadding = a.getInts("output_padding");
  if (kernel.size() != nd || strides.size() != nd || dilations.size() != nd ||
      outputPadding.size() != nd) {
    return;  // infer reports it
  }
  // The output's spatial shape when output_shape or SAME_* fix it; empty when pads do.
  Shape target;
  if (a.has("output_shape")) {
    target = a.getInts("output_shape");
    a.erase("output_shape");
    // Old exporters wrote the whole shape [N, M, spatial...]; only the spatial part matters.
    if (target.size() == nd + 2) target.erase(target.begin(), target.begin() + 2);
    if (target.size() != nd) {
      throw error("{}: output_shape {} must have {} values (the spatial dims of X {})",
                  op.describe(), shapeToString(target), nd, shapeToString(x));
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < nd; ++i) target.push_back(x[i + 2] * strides[i]);
  } else if (autoPad == "VALID") {
    a.set("pads", Shape(2 * nd, 0));
    return;
  } else if (autoPad != "NOTSET" && !autoPad.empty()) {
    throw error("{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                op.describe(), autoPad);
  }
  if (target.empty()) {
    if (!a.has("pads")) a.set("pads", Shape(2 * nd, 0));
    return;
  }
  // total_padding = stride * (in - 1) + output_padding + extent - output_shape, split as ONNX
  // says: opset 11+ puts the smaller half first for SAME_UPPER and the larger half first
  // otherwise; opsets 1-10 say the reverse.
  const bool smallFirst =
      op.opset >= 11 || op.opset == 0 ? autoPad == "SAME_UPPER" : autoPad != "SAME_UPPER";
  Shape pads(2 * nd, 0);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t total = strides[i] * (x[i + 2] - 1) + outputPadding[i] + extent - target[i];
    if (total < 0) {
      // A larger output than the kernel reaches: the extra elements are zero (plus bias) at the
      // end, which is what output_padding does.
      outputPadding[i] -= total;
      continue;
    }
    pads[i] = smallFirst ? total / 2 : total - total / 2;
    pads[i + nd] = total - pads[i];
  }
  a.set("pads", pads);
  a.set("output_padding", outputPadding);
}

// Checks a transposed convolution of x [N, C, spatial...] with w [C, M/group, k...] and returns
// the output's shape [N, M, spatial...].
Shape convTransposeOutputShape(const ShapeContext& ctx, const Shape& x, const Shape& w) {
  const size_t nd = checkConvRanks(ctx, x, w);
  const Attributes& a = ctx.attrs();
  const int64_t group = a.getInt("group", 1);
  if (group < 1 || x[1] % group != 0) {
    ctx.fail("group {} must be >= 1 and divide the input channels ({} in X {})", group, x[1],
             shapeToString(x));
  }
  if (w[0] != x[1]) {
    ctx.fail("channel mismatch: X {} has {} channels but W {} is [C, M/group, k...] with C = {}",
             shapeToString(x), x[1], shapeToString(w), w[0]);
  }
  const Shape& kernel = a.getInts("kernel_shape");
  const Shape& strides = a.getInts("strides");
  const Shape& dilations = a.getInts("dilations");
  const Shape& pads = a.getInts("pads");
  const Shape& outputPadding = a.getInts("output_padding");
  if (kernel != Shape(w.begin() + 2, w.end())) {
    ctx.fail("kernel_shape {} does not match the spatial dims of W {}", shapeToString(kernel),
             shapeToString(w));
  }
  if (strides.size() != nd || dilations.size() != nd || pads.size() != 2 * nd ||
      outputPadding.size() != nd) {
    ctx.fail(
        "strides {}, dilations {}, pads {} and output_padding {} must have {}, {}, {} and {} "
        "values for X {}",
        shapeToString(strides), shapeToString(dilations), shapeToString(pads),
        shapeToString(outputPadding), nd, nd, 2 * nd, nd, shapeToString(x));
  }
  Shape y{x[0], w[1] * group};
  for (size_t i = 0; i < nd; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[i + nd] < 0) {
      ctx.fail("strides {} and dilations {} must be >= 1 and pads {} >= 0", shapeToString(strides),
               shapeToString(dilations), shapeToString(pads));
    }
    if (outputPadding[i] < 0 || outputPadding[i] >= strides[i]) {
      ctx.fail(
          "output_padding {} must be >= 0 and less than strides {} (xtrain does not implement "
          "output_padding >= stride, which ONNX allows when below the dilation)",
          shapeToString(outputPadding), shapeToString(strides));
    }
    if (x[i + 2] < 1) {
      ctx.fail("the spatial dims of X {} must be >= 1", shapeToString(x));
    }
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t out =
        strides[i] * (x[i + 2] - 1) + outputPadding[i] + extent - pads[i] - pads[i + nd];
    if (out < 1) {
      ctx.fail("pads {} remove the whole output of X {} with kernel {} (output size {})",
               shapeToString(pads), shapeToString(x), shapeToString(kernel), out);
    }
    y.push_back(out);
  }
  return y;
}

// ConvTranspose(X, W, B?): X [N, C, spatial...], W [C, M/group, k...], B [M]; 1 to 3 spatial dims,
// ai.onnx opsets 1-17 (one definition; opset 11 swapped which side of an odd total padding gets the
// extra element when output_shape or SAME_* fixes the output).
//
// Canonical form: kernel_shape (from W when absent), strides, dilations (default 1), group
// (default 1), pads [begin..., end...] and output_padding (default 0) are always present; auto_pad
// and output_shape are resolved into pads (and, for an output_shape beyond what the kernel reaches,
// output_padding) and removed.
//
// ConvTranspose is the input gradient of the Conv that maps Y [N, M, out...] to X with the same W
// ([C, M/group, k...] is a Conv weight with C outputs) and the same strides, dilations, pads and
// group; output_padding < stride keeps that Conv's output at X's size. So the kernel is oneDNN's
// convolution backward-data plus the bias, dX is that Conv of gY, dW is ConvGradWeight with gY in
// the role of the Conv's input and X in the role of its output gradient, and dB sums gY.
XT_REGISTER_OP([] {
  OpDef d{.type = "ConvTranspose", .minInputs = 2, .maxInputs = 3};
  d.canonicalize = canonicalizeConvTranspose;
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    const Shape y = convTransposeOutputShape(ctx, ctx.input(0).shape(), ctx.input(1).shape());
    if (ctx.hasInput(2) && ctx.input(2).shape() != Shape{y[1]}) {
      ctx.fail("bias B {} must be [{}], one value per output channel (W {} with group {})",
               shapeToString(ctx.input(2).shape()), y[1], shapeToString(ctx.input(1).shape()),
               ctx.attrs().getInt("group"));
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), y)};
  };
  d.grad = [](GradContext& g) {
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) {
      g.setGradIn(0, g.emit("Conv", {gy, g.input(1)}, convAttrs(g), kOnnxDomain));
    }
    if (g.needsGrad(1)) {
      g.setGradIn(1,
                  g.emit("ConvGradWeight", {g.input(0), gy}, gradAttrs(g, g.inputInfo(1).shape())));
    }
    if (g.op().hasInput(2) && g.needsGrad(2)) {
      const Shape& y = g.outputInfo(0).shape();
      Shape perChannel(y.size(), 1);
      perChannel[1] = y[1];
      g.setGradIn(2, g.reshapeTo(g.reduceToShape(gy, perChannel), {y[1]}));
    }
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
