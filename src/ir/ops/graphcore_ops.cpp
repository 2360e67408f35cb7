// PopART's ai.graphcore opset 1 utility ops: Detach, CopyVarUpdate, Nop, Scale, ScaledAdd,
// DynamicSlice, DynamicUpdate, DynamicZero, DynamicAdd, Init, PrintTensor, Remainder, Fmod,
// Reverse, Round, Abort, and the ai.xtrain grad ops they need (DynamicSliceGrad, ModGradDivisor).
//
// Semantics on the simulated device:
//  - Detach passes its input through and has no gradient (the gradient stops there); Nop passes
//    its input through, gradient included.
//  - Dynamic*: `offset` is an integer tensor [len(axes)] read at run time. Each offset is clamped
//    into [0, dim - size] along its axis (as XLA's dynamic_slice does), so no offset reads or
//    writes out of bounds; gradients use the same clamped offsets.
//  - Init: a tensor of `shape` and `data_type` (PopART's DataType enum value) filled with zeros,
//    whatever the init_type (on an IPU, NoInit leaves the memory as it is: here it is zeroed too).
//  - PrintTensor writes its input to standard error whenever it runs (whatever the log level) and
//    passes it through; with print_gradient=1 its gradient is printed too.
//  - Abort throws a runtime error naming the op when it runs (unconditionally, or when its optional
//    condition input is nonzero).
#include <algorithm>
#include <cmath>
#include <set>

#include "ir/op_registry.hpp"
#include "xtrain/tensornames.hpp"

namespace xtrain::ir {
namespace {

void requireFloatInput(const ShapeContext& ctx, size_t i, const char* name) {
  const TensorInfo& in = ctx.input(i);
  if (!isFloatingPoint(in.dataType())) {
    ctx.fail("input {} ({}) is {}, expected a floating-point tensor", i, name, in.toString());
  }
}

// ---- Detach, Nop, Scale

XT_REGISTER_OP([] {
  OpDef d{.type = "Detach", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(0)}; };
  // Defined, but sets no input gradient: the gradient stops here.
  d.grad = [](GradContext&) {};
  return d;
}());

// CopyVarUpdate(variable, updater), PopART's copyvarupdate: Y is the updater's value, the value the
// variable takes; a TrainingSession adds the write of the variable after the micro-batch's backward
// pass (session/training_graph.cpp). No gradient flows through it, as through PopART's.
XT_REGISTER_OP([] {
  OpDef d{.type = "CopyVarUpdate", .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    if (ctx.input(0) != ctx.input(1)) {
      ctx.fail("input 0 (the variable) is {} but input 1 (its new value) is {}; they must match",
               ctx.input(0).toString(), ctx.input(1).toString());
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext&) {};
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d{.type = "Nop", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(0)}; };
  d.grad = [](GradContext& g) { g.setGradIn(0, g.gradOut(0)); };
  return d;
}());

// Scale(x) = scale * x, attribute scale (float, required). Floating-point x, or INT32/INT64 x
// with an integral scale (PopART's device casts the scale to x's type); integers get no gradient.
XT_REGISTER_OP([] {
  OpDef d{.type = "Scale", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) {
    if (!ctx.attrs().has("scale")) ctx.fail("attribute 'scale' (a float) is required");
    const TensorInfo& x = ctx.input(0);
    if (x.dataType() == DataType::INT32 || x.dataType() == DataType::INT64) {
      const float s = ctx.attrs().getFloat("scale");
      if (s != std::trunc(s) || std::fabs(s) > 2147483647.0f) {
        ctx.fail("scale {} is not an integer, but input 0 (X) is {}", s, x.toString());
      }
    } else {
      requireFloatInput(ctx, 0, "X");
    }
    return std::vector<TensorInfo>{x};
  };
  d.grad = [](GradContext& g) {
    if (!isFloatingPoint(g.inputInfo(0).dataType())) return;
    Attributes a;
    a.set("scale", g.attrs().getFloat("scale"));
    g.setGradIn(0, g.emit("Scale", {g.gradOut(0)}, a, kGraphcoreDomain));
  };
  return d;
}());

// ---- ScaledAdd

// Takes the value of constant scalar input `index` into float attribute `attr` and marks the input
// absent; a non-constant input stays (the kernel reads it at run time).
void constScaleToAttr(Op& op, const Graph& graph, size_t index, const char* attr) {
  if (!op.hasInput(index)) return;
  const Tensor& t = graph.tensor(op.inputs[index]);
  if (t.kind != TensorKind::Const || !t.value || t.value->nelms() != 1) return;
  op.attrs.set(attr, static_cast<float>(t.value->getAsDouble(0)));
  op.inputs[index].clear();
}

// ScaledAdd(T0, T1[, scale0[, scale1]]) = scale0 * T0 + scale1 * T1 with numpy broadcasting. The
// scales are float attributes (default 1) or scalar tensor inputs; constant scale inputs become
// attributes.
XT_REGISTER_OP([] {
  OpDef d{.type = "ScaledAdd", .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 4};
  d.canonicalize = [](Op& op, const Graph& graph) {
    constScaleToAttr(op, graph, 2, "scale0");
    constScaleToAttr(op, graph, 3, "scale1");
  };
  d.infer = [](const ShapeContext& ctx) {
    requireFloatInput(ctx, 0, "T0");
    requireFloatInput(ctx, 1, "T1");
    const TensorInfo& a = ctx.input(0);
    const TensorInfo& b = ctx.input(1);
    if (a.dataType() != b.dataType()) {
      ctx.fail("T0 is {} and T1 is {}; expected one element type", a.toString(), b.toString());
    }
    for (size_t i = 2; i < 4; ++i) {
      if (!ctx.hasInput(i)) continue;
      const TensorInfo& s = ctx.input(i);
      if (s.nelms() != 1 || !isFloatingPoint(s.dataType())) {
        ctx.fail("input {} (scale{}) is {}, expected a floating-point scalar", i, i - 2,
                 s.toString());
      }
    }
    return std::vector<TensorInfo>{
        TensorInfo(a.dataType(), broadcastShapes(ctx, a.shape(), b.shape()))};
  };
  d.grad = [](GradContext& g) {
    const TensorId& gy = g.gradOut(0);
    for (size_t k = 0; k < 2; ++k) {
      const std::string attr = k == 0 ? "scale0" : "scale1";
      const size_t scaleIn = 2 + k;
      if (g.needsGrad(k)) {
        TensorId gk;
        if (g.op().hasInput(scaleIn)) {
          TensorId s = g.input(scaleIn);
          if (g.inputInfo(scaleIn).dataType() != g.inputInfo(k).dataType()) {
            Attributes c;
            c.set("to", static_cast<int64_t>(dataTypeToOnnx(g.inputInfo(k).dataType())));
            s = g.emit("Cast", {s}, c, kOnnxDomain);
          }
          if (!g.inputInfo(scaleIn).shape().empty()) s = g.reshapeTo(s, {});
          gk = g.emit("Mul", {gy, s}, {}, kOnnxDomain);
        } else {
          Attributes a;
          a.set("scale", g.attrs().getFloat(attr, 1.0f));
          gk = g.emit("Scale", {gy}, a, kGraphcoreDomain);
        }
        g.setGradIn(k, g.reduceToShape(gk, g.inputInfo(k).shape()));
      }
      if (g.needsGrad(scaleIn)) {
        // d/dscale_k = sum(gy * T_k), cast and reshaped to the scale's info.
        TensorId p = g.emit("Mul", {gy, g.input(k)}, {}, kOnnxDomain);
        TensorId s = g.reduceToShape(p, {});
        if (g.inputInfo(scaleIn).dataType() != g.inputInfo(k).dataType()) {
          Attributes c;
          c.set("to", static_cast<int64_t>(dataTypeToOnnx(g.inputInfo(scaleIn).dataType())));
          s = g.emit("Cast", {s}, c, kOnnxDomain);
        }
        g.setGradIn(scaleIn, g.reshapeTo(s, g.inputInfo(scaleIn).shape()));
      }
    }
  };
  return d;
}());

// ---- Dynamic slice family

// Checks axes/sizes against the tensor's shape and the offset input (index 1); returns the slice
// shape: the tensor's shape with sizes[i] at axes[i]. Normalises negative axes in place.
Shape checkDynamic(const ShapeContext& ctx, const Shape& tensorShape) {
  const auto& axes = ctx.attrs().getInts("axes", {});
  const auto& sizes = ctx.attrs().getInts("sizes", {});
  if (axes.empty()) ctx.fail("attribute 'axes' is missing or empty; expected at least one axis");
  if (axes.size() != sizes.size()) {
    ctx.fail("'axes' has {} entries and 'sizes' {}; expected one size per axis", axes.size(),
             sizes.size());
  }
  const int64_t rank = static_cast<int64_t>(tensorShape.size());
  Shape slice = tensorShape;
  std::set<int64_t> seen;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t ax = normalizeAxis(ctx, axes[i], rank);
    if (!seen.insert(ax).second) ctx.fail("axis {} appears twice in 'axes' {}", ax, axes);
    const int64_t dim = tensorShape[static_cast<size_t>(ax)];
    if (sizes[i] < 0 || sizes[i] > dim) {
      ctx.fail("sizes[{}] is {} but axis {} has {} elements; expected 0 <= size <= {}", i, sizes[i],
               ax, dim, dim);
    }
    slice[static_cast<size_t>(ax)] = sizes[i];
  }
  const TensorInfo& off = ctx.input(1);
  const DataType ot = off.dataType();
  if (ot != DataType::INT32 && ot != DataType::INT64 && ot != DataType::UINT32) {
    ctx.fail("input 1 (offset) is {}, expected UINT32, INT32 or INT64", off.toString());
  }
  if (off.nelms() != static_cast<int64_t>(axes.size()) || off.shape().size() > 1) {
    ctx.fail("input 1 (offset) is {}, expected a 1-D tensor of {} offsets (one per axis)",
             off.toString(), axes.size());
  }
  return slice;
}

// Canonical axes: non-negative (kernels and grads read them as is).
void normalizeAxesAttr(Op& op, const Graph& graph) {
  if (!op.attrs.has("axes") || !op.hasInput(0)) return;
  const int64_t rank = static_cast<int64_t>(graph.tensor(op.inputs[0]).info.shape().size());
  std::vector<int64_t> axes = op.attrs.getInts("axes");
  for (auto& a : axes) {
    if (a < 0 && a >= -rank) a += rank;
  }
  op.attrs.set("axes", axes);
}

Attributes dynamicAttrs(const GradContext& g) {
  Attributes a;
  a.set("axes", g.attrs().getInts("axes"));
  a.set("sizes", g.attrs().getInts("sizes"));
  return a;
}

// The ai.graphcore dynamic op `type` applied to the gradient at the op's offset, with its axes and
// sizes.
TensorId emitDynamic(GradContext& g, const char* type) {
  return g.emit(type, {g.gradOut(0), g.input(1)}, dynamicAttrs(g), kGraphcoreDomain);
}

// The ai.graphcore dynamic ops: (tensor, offset[, slice]) with attributes axes and sizes.
OpDef dynamicOp(const char* type, int numInputs,
                std::function<std::vector<TensorInfo>(const ShapeContext&)> infer,
                std::function<void(GradContext&)> grad) {
  OpDef d{.type = type,
          .domain = kGraphcoreDomain,
          .minInputs = numInputs,
          .maxInputs = numInputs,
          .canonicalize = normalizeAxesAttr,
          .infer = std::move(infer),
          .grad = std::move(grad)};
  return d;
}

Shape withoutLeadingOnes(const Shape& s) {
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
}

// Whether a slice tensor of `given` shape holds a slice of `window` shape: the same shape, or (as
// PopART allows) the same once leading dimensions of size 1 are dropped. The elements are laid out
// alike either way.
bool holdsWindow(const Shape& given, const Shape& window) {
  return given == window || withoutLeadingOnes(given) == withoutLeadingOnes(window);
}

// DynamicUpdate and DynamicAdd: the tensor, once the slice (input 2) is checked against the
// offset's window.
std::vector<TensorInfo> inferDynamicWrite(const ShapeContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const Shape slice = checkDynamic(ctx, x.shape());
  const TensorInfo& s = ctx.input(2);
  if (s.dataType() != x.dataType() || !holdsWindow(s.shape(), slice)) {
    ctx.fail("input 2 (slice) is {}, expected {} (leading dimensions of size 1 may be dropped)",
             s.toString(), TensorInfo(x.dataType(), slice).toString());
  }
  return {x};
}

// The gradient of a write's slice input: the window of the output's gradient, in the slice
// input's shape.
TensorId sliceInputGrad(GradContext& g) {
  TensorId w = emitDynamic(g, "DynamicSlice");
  const Shape& shape = g.inputInfo(2).shape();
  return g.outputInfo(0).shape() == shape ? w : g.reshapeTo(w, shape);
}

// DynamicSlice(tensor, offset[, slice]) -> slice. PopART's third input is a tensor the slice is
// written into, whose values are all overwritten: only its shape matters (the output's, which may
// drop the window's leading dimensions of size 1). Canonical form: two inputs, and attribute
// `sliceShape` when the third input was given.
XT_REGISTER_OP([] {
  OpDef d = dynamicOp(
      "DynamicSlice", 2,
      [](const ShapeContext& ctx) {
        const TensorInfo& x = ctx.input(0);
        const Shape window = checkDynamic(ctx, x.shape());
        if (!ctx.attrs().has("sliceShape")) return std::vector<TensorInfo>{{x.dataType(), window}};
        const Shape given = ctx.attrs().getInts("sliceShape");
        if (!holdsWindow(given, window)) {
          ctx.fail(
              "input 2 (slice) has shape {}, expected {} (leading dimensions of size 1 may "
              "be dropped)",
              shapeToString(given), shapeToString(window));
        }
        return std::vector<TensorInfo>{{x.dataType(), given}};
      },
      [](GradContext& g) {
        Attributes a = dynamicAttrs(g);
        a.set("shape", g.inputInfo(0).shape());
        TensorId gy = g.gradOut(0);
        Shape window = g.inputInfo(0).shape();
        const auto& axes = g.attrs().getInts("axes");
        const auto& sizes = g.attrs().getInts("sizes");
        for (size_t i = 0; i < axes.size(); ++i) window[static_cast<size_t>(axes[i])] = sizes[i];
        if (g.outputInfo(0).shape() != window) gy = g.reshapeTo(gy, window);
        g.setGradIn(0, g.emit("DynamicSliceGrad", {gy, g.input(1)}, a));
      });
  d.maxInputs = 3;
  d.canonicalize = [](Op& op, const Graph& graph) {
    normalizeAxesAttr(op, graph);
    if (op.inputs.size() < 3) return;
    if (op.hasInput(2)) {
      const TensorInfo& x = graph.tensor(op.inputs[0]).info;
      const TensorInfo& slice = graph.tensor(op.inputs[2]).info;
      if (slice.dataType() != x.dataType()) {
        throw error("{}: input 2 (slice) is {} but the tensor is {}; expected one element type",
                    op.describe(), slice.toString(), x.toString());
      }
      op.attrs.set("sliceShape", slice.shape());
    }
    op.inputs.resize(2);
  };
  return d;
}());

// DynamicSliceGrad(gy, offset) with attribute shape: zeros of `shape` with gy at the offset.
XT_REGISTER_OP([] {
  OpDef d{.type = "DynamicSliceGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const Shape shape = ctx.attrs().getInts("shape");
    if (checkDynamic(ctx, shape) != ctx.input(0).shape()) {
      ctx.fail("gradient {} does not have the slice's shape", ctx.input(0).toString());
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), shape)};
  };
  return d;
}());

// DynamicUpdate(tensor, offset, slice): tensor with slice written at offset.
XT_REGISTER_OP(dynamicOp("DynamicUpdate", 3, inferDynamicWrite, [](GradContext& g) {
  if (g.needsGrad(0)) g.setGradIn(0, emitDynamic(g, "DynamicZero"));
  if (g.needsGrad(2)) g.setGradIn(2, sliceInputGrad(g));
}));

// DynamicZero(tensor, offset): tensor with the slice at offset set to 0.
XT_REGISTER_OP(dynamicOp(
    "DynamicZero", 2,
    [](const ShapeContext& ctx) {
      checkDynamic(ctx, ctx.input(0).shape());
      return std::vector<TensorInfo>{ctx.input(0)};
    },
    [](GradContext& g) { g.setGradIn(0, emitDynamic(g, "DynamicZero")); }));

// DynamicAdd(tensor, offset, slice): tensor with slice added at offset.
XT_REGISTER_OP(dynamicOp("DynamicAdd", 3, inferDynamicWrite, [](GradContext& g) {
  if (g.needsGrad(0)) g.setGradIn(0, g.gradOut(0));
  if (g.needsGrad(2)) g.setGradIn(2, sliceInputGrad(g));
}));

// ---- Init

// Init() -> zeros of attribute shape and data_type (PopART's DataType enum value); init_type
// (0 NoInit, 1 Zero) and batch_axis are accepted; the tensor is zeroed either way.
XT_REGISTER_OP([] {
  OpDef d{.type = "Init", .domain = kGraphcoreDomain, .minInputs = 0, .maxInputs = 0};
  d.infer = [](const ShapeContext& ctx) {
    if (!ctx.attrs().has("shape")) ctx.fail("attribute 'shape' is required");
    if (!ctx.attrs().has("data_type")) ctx.fail("attribute 'data_type' is required");
    const Shape shape = ctx.attrs().getInts("shape");
    for (int64_t v : shape) {
      if (v < 0) ctx.fail("shape {} has a negative dimension", shape);
    }
    const int64_t t = ctx.attrs().getInt("data_type");
    if (t < 0 || t >= static_cast<int64_t>(DataType::UNDEFINED) ||
        dataTypeSize(static_cast<DataType>(t)) == 0) {
      ctx.fail("data_type {} is not a DataType with a fixed element size (0 UINT8 .. 14 DOUBLE)",
               t);
    }
    const int64_t init = ctx.attrs().getInt("init_type", 1);
    if (init != 0 && init != 1) ctx.fail("init_type {} is not 0 (NoInit) or 1 (Zero)", init);
    if (ctx.attrs().has("batch_axis")) {
      const int64_t b = ctx.attrs().getInt("batch_axis");
      if (b < -1 || b >= static_cast<int64_t>(shape.size())) {
        ctx.fail("batch_axis {} is not an axis of shape {} (or -1)", b, shape);
      }
    }
    return std::vector<TensorInfo>{TensorInfo(static_cast<DataType>(t), shape)};
  };
  return d;
}());

// ---- PrintTensor

XT_REGISTER_OP([] {
  OpDef d{.type = "PrintTensor", .domain = kGraphcoreDomain};
  // The default title is the printed tensor's id, as PopART prints it.
  d.canonicalize = [](Op& op, const Graph&) {
    if (op.attrs.getString("title", "").empty() && op.hasInput(0)) {
      op.attrs.set("title", op.inputs[0]);
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    const int64_t ff = ctx.attrs().getInt("floatFormat", 0);
    if (ff < 0 || ff > 3)
      ctx.fail("floatFormat {} is not 0 auto, 1 fixed, 2 scientific, 3 none", ff);
    if (ctx.attrs().getInt("summariseThreshold", 1000) < 0 ||
        ctx.attrs().getInt("edgeItems", 3) < 0 || ctx.attrs().getInt("digits", 8) < 0) {
      ctx.fail("summariseThreshold, edgeItems and digits must be >= 0");
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    if (g.attrs().getInt("print_gradient", 1) == 0) {
      g.setGradIn(0, g.gradOut(0));
      return;
    }
    Attributes a = g.attrs();
    a.set("print_gradient", int64_t{0});
    // PopART's titles: a title the user gave + "_gradient"; for the default (the printed tensor's
    // id, canonicalize above) the id of the tensor's gradient. (A user title equal to the tensor's
    // id counts as the default.)
    const std::string title = g.attrs().getString("title", g.input(0));
    a.set("title", title == g.input(0) ? std::string(reservedGradientPrefix()) + title
                                       : title + "_gradient");
    g.setGradIn(0, g.emit("PrintTensor", {g.gradOut(0)}, a, kGraphcoreDomain));
  };
  return d;
}());

// ---- Remainder, Fmod

// Remainder (Python's %, the sign of the divisor) and Fmod (C's fmod, the sign of the dividend),
// numpy broadcasting. Floating point (x % 0 is NaN) or INT32/INT64 (x % 0 is 0, as numpy gives).
// a = q*b + r with q = floor(a/b) or trunc(a/b): da = gy, db = -q*gy (the ai.xtrain
// ModGradDivisor op, attribute fmod).
OpDef modOp(const std::string& type, bool fmod) {
  OpDef d{.type = type, .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& a = ctx.input(0);
    const TensorInfo& b = ctx.input(1);
    const DataType t = a.dataType();
    if (!isFloatingPoint(t) && t != DataType::INT32 && t != DataType::INT64) {
      ctx.fail("input 0 (A) is {}, expected a floating-point, INT32 or INT64 tensor", a.toString());
    }
    if (a.dataType() != b.dataType()) {
      ctx.fail("A is {} and B is {}; expected one element type", a.toString(), b.toString());
    }
    return std::vector<TensorInfo>{
        TensorInfo(a.dataType(), broadcastShapes(ctx, a.shape(), b.shape()))};
  };
  d.grad = [fmod](GradContext& g) {
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) g.setGradIn(0, g.reduceToShape(gy, g.inputInfo(0).shape()));
    if (g.needsGrad(1)) {
      Attributes a;
      a.set("fmod", int64_t{fmod ? 1 : 0});
      TensorId gb = g.emit("ModGradDivisor", {gy, g.input(0), g.input(1)}, a);
      g.setGradIn(1, g.reduceToShape(gb, g.inputInfo(1).shape()));
    }
  };
  return d;
}

XT_REGISTER_OP(modOp("Remainder", false));
XT_REGISTER_OP(modOp("Fmod", true));

// ModGradDivisor(gy, a, b) = -gy * q(a/b) at gy's (the broadcast) shape.
XT_REGISTER_OP([] {
  OpDef d{.type = "ModGradDivisor", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    for (size_t i = 1; i < 3; ++i) {
      if (broadcastShapes(ctx, ctx.input(i).shape(), gy.shape()) != gy.shape()) {
        ctx.fail("input {} is {}, which does not broadcast to the gradient's shape {}", i,
                 ctx.input(i).toString(), shapeToString(gy.shape()));
      }
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

// ---- Reverse, Round, Abort

// Reverse(x), attribute dimensions (each in [0, rank) at most once; empty: identity). As PopART's,
// negative dimensions are refused.
XT_REGISTER_OP([] {
  OpDef d{.type = "Reverse", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    const int64_t rank = static_cast<int64_t>(x.shape().size());
    const std::vector<int64_t> dims = ctx.attrs().getInts("dimensions", {});
    std::set<int64_t> seen;
    for (int64_t v : dims) {
      if (v < 0) {
        ctx.fail("dimensions {}: invalid dimension '{}'. Only positive dimensions are supported",
                 dims, v);
      }
      if (v >= rank) {
        ctx.fail("dimensions {}: invalid dimension '{}' for input tensor of rank {} ({})", dims, v,
                 rank, x.toString());
      }
      if (!seen.insert(v).second) {
        ctx.fail("Dimension {} appears multiple times in the list of dimensions {}", v, dims);
      }
    }
    return std::vector<TensorInfo>{x};
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("dimensions", g.attrs().getInts("dimensions", {}));
    g.setGradIn(0, g.emit("Reverse", {g.gradOut(0)}, a, kGraphcoreDomain));
  };
  return d;
}());

// Round(x): to the nearest integer, halves to even (ONNX Round-11). Its derivative is 0 wherever
// it exists: the gradient is a zero tensor (an Init), so training through it does not fail.
XT_REGISTER_OP([] {
  OpDef d{.type = "Round", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) {
    requireFloatInput(ctx, 0, "X");
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    const TensorInfo& x = g.inputInfo(0);
    Attributes a;
    a.set("shape", x.shape());
    a.set("data_type", static_cast<int64_t>(x.dataType()));
    a.set("init_type", int64_t{1});
    g.setGradIn(0, g.emit("Init", {}, a, kGraphcoreDomain));
  };
  return d;
}());

// Abort([condition]): no outputs; fails the run when it executes (condition absent or nonzero).
XT_REGISTER_OP([] {
  OpDef d{.type = "Abort",
          .domain = kGraphcoreDomain,
          .minInputs = 0,
          .maxInputs = 1,
          .minOutputs = 0,
          .maxOutputs = 0};
  d.infer = [](const ShapeContext& ctx) {
    if (ctx.hasInput(0) && ctx.input(0).nelms() != 1) {
      ctx.fail("input 0 (condition) is {}, expected a scalar", ctx.input(0).toString());
    }
    return std::vector<TensorInfo>{};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
