// Pooling: ONNX MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool, and the internal
// gradients MaxPoolGrad and AveragePoolGrad.
//
// Canonical form of MaxPool, AveragePool and their gradient ops: kernel_shape (required), strides
// (default 1), pads [begin..., end...] (default 0), dilations (MaxPool only, default 1), ceil_mode
// (default 0) and, for AveragePool, count_include_pad (default 0) are always present; auto_pad is
// resolved into pads against the input's spatial shape and removed. storage_order only concerns
// MaxPool's Indices output, which xtrain does not support (requesting it is an error). 1 to 3
// spatial dims.
//
// Output size per spatial dim: (in + pads - ((k - 1) * dilation + 1)) / stride + 1, rounded down,
// or up with ceil_mode; with ceil_mode a last window that would start in the end padding is dropped
// (as PyTorch and onnxruntime do). AveragePool with count_include_pad divides by the part of the
// window inside the input plus its explicit pads (the ceil_mode overhang beyond the end pad is not
// counted).
#include "ir/op_registry.hpp"
#include "ir/ops/auto_pad.hpp"

namespace xtrain::ir {
namespace {

void canonicalizePool(Op& op, const Graph& graph) {
  if (!op.hasInput(0)) {
    return;
  }
  const Shape& x = graph.tensor(op.inputs[0]).info.shape();
  Attributes& a = op.attrs;
  if (x.size() < 3 || !a.has("kernel_shape")) {
    return;  // infer reports it
  }
  const size_t nd = x.size() - 2;
  if (!a.has("strides")) {
    a.set("strides", Shape(nd, 1));
  }
  if (op.type == "MaxPool" && !a.has("dilations")) {
    a.set("dilations", Shape(nd, 1));
  }
  if (!a.has("ceil_mode")) {
    a.set("ceil_mode", int64_t{0});
  }
  if (op.type == "AveragePool" && !a.has("count_include_pad")) {
    a.set("count_include_pad", int64_t{0});
  }
  const Shape& kernel = a.getInts("kernel_shape");
  const Shape& strides = a.getInts("strides");
  const Shape dilations = a.getInts("dilations", Shape(nd, 1));
  if (kernel.size() != nd || strides.size() != nd || dilations.size() != nd) {
    return;  // infer reports it
  }
  a.set("pads", resolveAutoPad(op, a.getString("auto_pad", "NOTSET"), Shape(x.begin() + 2, x.end()),
                               kernel, strides, dilations, a.getInts("pads", {})));
  a.erase("auto_pad");
}

// Checks the canonical attributes against x [N, C, spatial...] and returns the pooled shape.
Shape poolOutputShape(const ShapeContext& ctx, const Shape& x) {
  if (x.size() < 3 || x.size() > 5) {
    ctx.fail("input X {} must be [N, C, spatial...] with 1 to 3 spatial dimensions",
             shapeToString(x));
  }
  const size_t nd = x.size() - 2;
  const Attributes& a = ctx.attrs();
  if (!a.has("kernel_shape")) {
    ctx.fail("attribute kernel_shape is required");
  }
  const Shape& kernel = a.getInts("kernel_shape");
  const Shape strides = a.getInts("strides", Shape(nd, 1));
  const Shape dilations = a.getInts("dilations", Shape(nd, 1));
  const Shape pads = a.getInts("pads", Shape(2 * nd, 0));
  const bool ceil = a.getInt("ceil_mode", 0) != 0;
  if (kernel.size() != nd || strides.size() != nd || dilations.size() != nd ||
      pads.size() != 2 * nd) {
    ctx.fail(
        "kernel_shape {}, strides {}, dilations {} and pads {} must have {}, {}, {} and {} values "
        "for "
        "X {}",
        shapeToString(kernel), shapeToString(strides), shapeToString(dilations),
        shapeToString(pads), nd, nd, nd, 2 * nd, shapeToString(x));
  }
  Shape y{x[0], x[1]};
  for (size_t i = 0; i < nd; ++i) {
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1) {
      ctx.fail("kernel_shape {}, strides {} and dilations {} must be >= 1", shapeToString(kernel),
               shapeToString(strides), shapeToString(dilations));
    }
    if (pads[i] < 0 || pads[i + nd] < 0 || pads[i] >= extent || pads[i + nd] >= extent) {
      ctx.fail("pads {} must be >= 0 and smaller than the window (kernel_shape {}, dilations {})",
               shapeToString(pads), shapeToString(kernel), shapeToString(dilations));
    }
    const int64_t span = x[i + 2] + pads[i] + pads[i + nd] - extent;
    if (span < 0) {
      ctx.fail(
          "the window (kernel_shape {}, dilations {}) is larger than the padded input X {} (pads "
          "{})",
          shapeToString(kernel), shapeToString(dilations), shapeToString(x), shapeToString(pads));
    }
    int64_t out = (ceil ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
    if (ceil && (out - 1) * strides[i] >= x[i + 2] + pads[i]) {
      --out;
    }
    y.push_back(out);
  }
  return y;
}

Attributes gradAttrs(const GradContext& g, bool withShape) {
  Attributes a;
  for (const auto& [name, value] : g.attrs().all()) {
    if (name != "storage_order") {
      a.set(name, value);
    }
  }
  if (withShape) {
    a.set("shape", g.inputInfo(0).shape());
  }
  return a;
}

std::vector<TensorInfo> inferPool(const ShapeContext& ctx) {
  ctx.requireFloatOrHalfInputs();
  if (ctx.op().hasOutput(1)) {
    ctx.fail("the Indices output is not supported; remove it from the node's outputs");
  }
  const Shape y = poolOutputShape(ctx, ctx.input(0).shape());
  return {TensorInfo(ctx.input(0).dataType(), y), TensorInfo(DataType::INT64, y)};
}

// MaxPool(X) -> Y (Indices unsupported). Gradient: MaxPoolGrad recomputes each window's argmax from
// X.
XT_REGISTER_OP([] {
  OpDef d{.type = "MaxPool", .maxOutputs = 2};
  d.canonicalize = canonicalizePool;
  d.infer = inferPool;
  d.grad = [](GradContext& g) {
    g.setGradIn(0, g.emit("MaxPoolGrad", {g.gradOut(0), g.input(0)}, gradAttrs(g, false)));
  };
  return d;
}());

// AveragePool(X) -> Y. Gradient: AveragePoolGrad.
XT_REGISTER_OP([] {
  OpDef d{.type = "AveragePool"};
  d.canonicalize = canonicalizePool;
  d.infer = inferPool;
  d.grad = [](GradContext& g) {
    g.setGradIn(0, g.emit("AveragePoolGrad", {g.gradOut(0)}, gradAttrs(g, true)));
  };
  return d;
}());

// MaxPoolGrad(gY, X) -> dX, internal: each gY element goes to the first maximum of its window in X.
XT_REGISTER_OP([] {
  OpDef d{.type = "MaxPoolGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    const Shape y = poolOutputShape(ctx, ctx.input(1).shape());
    if (ctx.input(0).shape() != y) {
      ctx.fail("gradient {} does not match the pooled shape {}", ctx.input(0).toString(),
               shapeToString(y));
    }
    return std::vector<TensorInfo>{ctx.input(1)};
  };
  return d;
}());

// AveragePoolGrad(gY) -> dX of shape `shape`, internal.
XT_REGISTER_OP([] {
  OpDef d{.type = "AveragePoolGrad", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    const Shape& x = ctx.attrs().getInts("shape");
    const Shape y = poolOutputShape(ctx, x);
    if (ctx.input(0).shape() != y) {
      ctx.fail("gradient {} does not match the pooled shape {}", ctx.input(0).toString(),
               shapeToString(y));
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), x)};
  };
  return d;
}());

// GlobalAveragePool and GlobalMaxPool: X [N, C, spatial...] -> [N, C, 1, ...].
std::vector<TensorInfo> inferGlobalPool(const ShapeContext& ctx) {
  ctx.requireFloatOrHalfInputs();
  const Shape& x = ctx.input(0).shape();
  if (x.size() < 3) ctx.fail("input X {} must be [N, C, spatial...]", shapeToString(x));
  Shape y(x.size(), 1);
  y[0] = x[0];
  y[1] = x[1];
  return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), y)};
}

// GlobalMaxPool: the maximum of each spatial plane (an empty plane is refused: it has none). Its
// gradient is ReduceMax's over the spatial axes (ReduceGrad mode max): gY at the first (row-major)
// maximum of each plane, 0 elsewhere.
XT_REGISTER_OP([] {
  OpDef d{.type = "GlobalMaxPool"};
  d.infer = [](const ShapeContext& ctx) {
    auto out = inferGlobalPool(ctx);
    const Shape& x = ctx.input(0).shape();
    if (shapeNelms(Shape(x.begin() + 2, x.end())) == 0) {
      ctx.fail("input X {} has empty spatial planes: they have no maximum", shapeToString(x));
    }
    return out;
  };
  d.grad = [](GradContext& g) {
    std::vector<int64_t> axes;
    for (int64_t a = 2; a < g.inputInfo(0).rank(); ++a) axes.push_back(a);
    Attributes a;
    a.set("axes", axes);
    a.set("mode", std::string("max"));
    g.setGradIn(0, g.emit("ReduceGrad", {g.gradOut(0), g.input(0), g.output(0)}, std::move(a)));
  };
  return d;
}());

// GlobalAveragePool. Gradient: gY broadcast back, divided by the number of spatial elements.
XT_REGISTER_OP([] {
  OpDef d{.type = "GlobalAveragePool"};
  d.infer = inferGlobalPool;
  d.grad = [](GradContext& g) {
    const Shape& x = g.inputInfo(0).shape();
    Attributes a;
    a.set("shape", x);
    const TensorId spread = g.emit("BroadcastToShape", {g.gradOut(0)}, a);
    const int64_t count = shapeNelms(Shape(x.begin() + 2, x.end()));
    g.setGradIn(0, g.emit("Mul",
                          {spread, g.scalar(count > 0 ? 1.0f / static_cast<float>(count) : 0.0f,
                                            g.inputInfo(0).dataType())},
                          {}, kOnnxDomain));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
