// Elementwise ops of the ONNX exporters' training graphs: math functions (Erf, Abs, Reciprocal,
// Floor, Ceil, Round, Sign, Sin, Cos), activations (LeakyRelu, Elu, Selu, Celu, PRelu, HardSigmoid,
// HardSwish, Softplus, Softsign, Mish), Clip, the variadic Max/Min, Mod, Where, the comparisons
// (Equal, Less, LessOrEqual, Greater, GreaterOrEqual) and the logical ops (Not, And, Or, Xor).
//
// Gradients use one-pass ai.xtrain grad ops (<Op>Grad(gy, x) -> gx, with the forward op's
// attributes), except Where (two Wheres), Max/Min (MaxMinGrad per input; ties go to the first
// input), PRelu (PReluGrad with two outputs), Mod (ModGradDivisor) and Clip's non-constant bounds
// (Less/Greater + Where). Floor, Ceil, Round and Sign have a zero gradient, as in PyTorch and
// PopART. Comparisons and logical ops output BOOL and have no gradient; integer inputs never get
// one.
//
// Opset differences handled in canonicalize/infer:
//  - Clip: opset < 11 has attributes min/max (defaults -FLT_MAX/FLT_MAX); from 11 they are
//    optional inputs (absent "": no bound), which become attributes when constant and the data is
//    floating point; from 12 integer types (bounds stay inputs, exact in INT64).
//  - Max/Min: broadcasting from opset 8 (before, equal shapes); integer types from 12.
//  - Equal: opset 7 for integers and BOOL, 11 adds floating point; LessOrEqual/GreaterOrEqual 12.
//  - Mod (10): fmod 0 (sign of the divisor; floats too, as PopART) or 1 (C fmod; sign of the
//    dividend).
//  - The activations' defaults (alpha, beta, gamma) are filled in by canonicalize.
#include <cmath>
#include <limits>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

bool isIntegerType(DataType t) {
  return t == DataType::INT32 || t == DataType::INT64;
}

void requireFloat(const ShapeContext& ctx, size_t i, const char* name) {
  const TensorInfo& in = ctx.input(i);
  if (!isFloatingPoint(in.dataType())) {
    ctx.fail("input {} ({}) is {}, expected a floating-point tensor (FLOAT or FLOAT16)", i, name,
             in.toString());
  }
}

// FLOAT, FLOAT16, INT32 or INT64.
void requireNumeric(const ShapeContext& ctx, size_t i, const char* name) {
  const TensorInfo& in = ctx.input(i);
  if (!isFloatingPoint(in.dataType()) && !isIntegerType(in.dataType())) {
    ctx.fail("input {} ({}) is {}, expected FLOAT, FLOAT16, INT32 or INT64", i, name,
             in.toString());
  }
}

void requireSameType(const ShapeContext& ctx, size_t i, size_t j) {
  if (ctx.input(i).dataType() != ctx.input(j).dataType()) {
    ctx.fail("inputs {} and {} have different types {} and {}; expected one element type", i, j,
             ctx.input(i).toString(), ctx.input(j).toString());
  }
}

// Fills attribute `name` with `value` when absent; an int-typed value becomes a float. Another
// type is an error naming the op.
void defaultFloat(Op& op, const char* name, float value) {
  if (!op.attrs.has(name)) {
    op.attrs.set(name, value);
    return;
  }
  try {
    op.attrs.set(name, op.attrs.getFloat(name));
  } catch (const error& e) {
    throw error("{}: {}", op.describe(), e.what());
  }
}

// A grad op (gy, x...) -> gx with gy's info; every other input must have gy's shape.
OpDef gradOp(const std::string& type, int numInputs = 2) {
  OpDef d{.type = type, .domain = kXtrainDomain, .minInputs = numInputs, .maxInputs = numInputs};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      if (ctx.hasInput(i) && ctx.input(i).shape() != gy.shape()) {
        ctx.fail("input {} is {} but the incoming gradient is {}; expected equal shapes", i,
                 ctx.input(i).toString(), gy.toString());
      }
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}

// A float unary op whose gradient is the one-pass grad op <type>Grad(gy, x) (or (gy, y) when
// useOutput), given the forward op's attributes. `defaults` fills attributes; `check` validates.
OpDef floatUnary(const std::string& type, std::vector<std::pair<const char*, float>> defaults = {},
                 bool useOutput = false, std::function<void(const ShapeContext&)> check = nullptr) {
  OpDef d{.type = type};
  if (!defaults.empty()) {
    d.canonicalize = [defaults](Op& op, const Graph&) {
      for (const auto& [name, v] : defaults) defaultFloat(op, name, v);
    };
  }
  d.infer = [check](const ShapeContext& ctx) {
    requireFloat(ctx, 0, "X");
    if (check) check(ctx);
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [type, useOutput](GradContext& g) {
    g.setGradIn(
        0, g.emit(type + "Grad", {g.gradOut(0), useOutput ? g.output(0) : g.input(0)}, g.attrs()));
  };
  return d;
}

// Floor, Ceil, Round, Sign: piecewise constant, so the gradient is zero (ZerosLike(gy)).
OpDef steps(const std::string& type, bool allowIntegers) {
  OpDef d{.type = type};
  d.infer = [allowIntegers](const ShapeContext& ctx) {
    if (allowIntegers) {
      requireNumeric(ctx, 0, "X");
    } else {
      requireFloat(ctx, 0, "X");
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    if (!isFloatingPoint(g.inputInfo(0).dataType())) return;
    g.setGradIn(0, g.emit("ZerosLike", {g.gradOut(0)}));
  };
  return d;
}

XT_REGISTER_OP(floatUnary("Erf"));
XT_REGISTER_OP(floatUnary("Sin"));
XT_REGISTER_OP(floatUnary("Cos"));
XT_REGISTER_OP(floatUnary("Reciprocal", {}, true));  // gx = -gy y^2
XT_REGISTER_OP(floatUnary("Softplus"));
XT_REGISTER_OP(floatUnary("Softsign"));
XT_REGISTER_OP(floatUnary("Mish"));
XT_REGISTER_OP(floatUnary("HardSwish"));
XT_REGISTER_OP(floatUnary("LeakyRelu", {{"alpha", 0.01f}}));
XT_REGISTER_OP(floatUnary("Elu", {{"alpha", 1.0f}}));
XT_REGISTER_OP(floatUnary("Selu", {{"alpha", 1.67326319217681884765625f},
                                   {"gamma", 1.05070102214813232421875f}}));
XT_REGISTER_OP(floatUnary("Celu", {{"alpha", 1.0f}}, false, [](const ShapeContext& ctx) {
  const float alpha = ctx.attrs().getFloat("alpha");
  if (alpha == 0.0f || !std::isfinite(alpha)) {
    ctx.fail("attribute alpha is {}, expected a finite nonzero value", alpha);
  }
}));
XT_REGISTER_OP(floatUnary("HardSigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}}));
XT_REGISTER_OP(floatUnary("ThresholdedRelu", {{"alpha", 1.0f}}));  // x if x > alpha, else 0

XT_REGISTER_OP(steps("Floor", false));
XT_REGISTER_OP(steps("Ceil", false));
XT_REGISTER_OP(steps("Round", false));
XT_REGISTER_OP(steps("Sign", true));

// Abs: FLOAT, FLOAT16, INT32, INT64; gx = gy sign(x) (0 at 0, as PyTorch).
XT_REGISTER_OP([] {
  OpDef d{.type = "Abs"};
  d.infer = [](const ShapeContext& ctx) {
    requireNumeric(ctx, 0, "X");
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    if (!isFloatingPoint(g.inputInfo(0).dataType())) return;
    g.setGradIn(0, g.emit("AbsGrad", {g.gradOut(0), g.input(0)}));
  };
  return d;
}());

// ZerosLike(x): zeros of x's info (the gradient of the step functions).
XT_REGISTER_OP([] {
  OpDef d{.type = "ZerosLike", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(0)}; };
  return d;
}());

XT_REGISTER_OP(gradOp("ErfGrad"));
XT_REGISTER_OP(gradOp("SinGrad"));
XT_REGISTER_OP(gradOp("CosGrad"));
XT_REGISTER_OP(gradOp("ReciprocalGrad"));
XT_REGISTER_OP(gradOp("SoftplusGrad"));
XT_REGISTER_OP(gradOp("SoftsignGrad"));
XT_REGISTER_OP(gradOp("MishGrad"));
XT_REGISTER_OP(gradOp("HardSwishGrad"));
XT_REGISTER_OP(gradOp("LeakyReluGrad"));
XT_REGISTER_OP(gradOp("EluGrad"));
XT_REGISTER_OP(gradOp("SeluGrad"));
XT_REGISTER_OP(gradOp("CeluGrad"));
XT_REGISTER_OP(gradOp("HardSigmoidGrad"));
XT_REGISTER_OP(gradOp("ThresholdedReluGrad"));
XT_REGISTER_OP(gradOp("AbsGrad"));

// ---- Clip

// Takes constant scalar input `index` of a Clip into attribute `name`; leaves a non-constant one.
// A constant bound must be a scalar of the input's type or, for floating-point input, of any
// floating-point type.
void clipBoundToAttr(Op& op, const Graph& graph, size_t index, const char* name) {
  if (!op.hasInput(index)) return;
  const Tensor& t = graph.tensor(op.inputs[index]);
  if (t.kind != TensorKind::Const || !t.value) return;
  if (t.value->nelms() != 1) {
    throw error("{}: input {} ('{}', {}) is {}, expected a scalar", op.describe(), index, t.id,
                name, t.info.toString());
  }
  const TensorInfo& x = graph.tensor(op.inputs[0]).info;
  // A floating-point bound of another floating-point type (a FLOAT min on FLOAT16 data) becomes
  // the float attribute like one of the input's type, as PopART reads it.
  const bool bothFloat = isFloatingPoint(t.info.dataType()) && isFloatingPoint(x.dataType());
  if (t.info.dataType() != x.dataType() && !bothFloat) {
    throw error("{}: input {} ('{}', {}) is {} but the input is {}; expected one element type",
                op.describe(), index, t.id, name, t.info.toString(), x.toString());
  }
  op.attrs.set(name, static_cast<float>(t.value->getAsDouble(0)));
  op.inputs[index].clear();
}

// Canonical Clip: input X, optional inputs min (1) and max (2) only when not constant, attributes
// min/max (defaults -inf/+inf) for floating-point data. Integer data keeps its bounds as inputs, so
// that INT64 bounds stay exact.
XT_REGISTER_OP([] {
  OpDef d{.type = "Clip", .maxInputs = 3};
  d.canonicalize = [](Op& op, const Graph& graph) {
    const bool attrForm = op.opset > 0 && op.opset < 11;
    if (attrForm && op.inputs.size() > 1) {
      throw error("{}: opset {} Clip takes min and max as attributes, but the node has {} inputs",
                  op.describe(), op.opset, op.inputs.size());
    }
    const bool isFloat = !op.inputs.empty() && !op.inputs[0].empty() &&
                         isFloatingPoint(graph.tensor(op.inputs[0]).info.dataType());
    if (isFloat) {
      clipBoundToAttr(op, graph, 1, "min");
      clipBoundToAttr(op, graph, 2, "max");
      // Clip-6's defaults are FLOAT's extremes (so inf becomes FLT_MAX); from opset 11 an absent
      // bound does not clip.
      const float big =
          attrForm ? std::numeric_limits<float>::max() : std::numeric_limits<float>::infinity();
      defaultFloat(op, "min", -big);
      defaultFloat(op, "max", big);
    }
    while (!op.inputs.empty() && op.inputs.back().empty()) op.inputs.pop_back();
  };
  d.infer = [](const ShapeContext& ctx) {
    requireNumeric(ctx, 0, "input");
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.hasInput(i)) continue;
      requireSameType(ctx, 0, i);
      if (ctx.input(i).nelms() != 1) {
        ctx.fail("input {} ({}) is {}, expected a scalar", i, i == 1 ? "min" : "max",
                 ctx.input(i).toString());
      }
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  // gx = gy where min <= x <= max (inclusive, as PyTorch's clamp). Bounds that are inputs (not
  // constants) get the sum of gy where x is below min (above max).
  d.grad = [](GradContext& g) {
    if (!isFloatingPoint(g.inputInfo(0).dataType())) return;
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) {
      std::vector<TensorId> in{gy, g.input(0)};
      for (size_t i = 1; i < g.op().inputs.size(); ++i) in.push_back(g.op().inputs[i]);
      g.setGradIn(0, g.emit("ClipGrad", in, g.attrs()));
    }
    for (size_t i = 1; i < 3; ++i) {
      if (!g.needsGrad(i) || !g.op().hasInput(i)) continue;
      const TensorId outside =
          g.emit(i == 1 ? "Less" : "Greater", {g.input(0), g.input(i)}, {}, kOnnxDomain);
      const TensorId zero = g.scalar(0.0f, g.inputInfo(0).dataType());
      const TensorId masked = g.emit("Where", {outside, gy, zero}, {}, kOnnxDomain);
      g.setGradIn(i, g.reduceToShape(masked, g.inputInfo(i).shape()));
    }
  };
  return d;
}());

// ClipGrad(gy, x, [min], [max]) with Clip's attributes.
XT_REGISTER_OP([] {
  OpDef d = gradOp("ClipGrad");
  d.maxInputs = 4;
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    if (ctx.input(1).shape() != gy.shape()) ctx.fail("x and gy have different shapes");
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

// ---- Max, Min

// Max/Min(x0, x1, ...): elementwise extremum with numpy broadcasting. The gradient of x_i is gy
// where x_i is the first input attaining the extremum (ties go to the first), summed down to x_i's
// shape.
OpDef maxMin(const std::string& type) {
  OpDef d{.type = type, .maxInputs = -1};
  d.infer = [](const ShapeContext& ctx) {
    requireNumeric(ctx, 0, "data_0");
    Shape shape = ctx.input(0).shape();
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      requireSameType(ctx, 0, i);
      const Shape& s = ctx.input(i).shape();
      if (ctx.op().opset > 0 && ctx.op().opset < 8 && s != shape) {
        ctx.fail(
            "input {} is {} but input 0 is {}; opset {} needs equal shapes (broadcasting from "
            "opset 8)",
            i, ctx.input(i).toString(), ctx.input(0).toString(), ctx.op().opset);
      }
      shape = broadcastShapes(ctx, shape, s);
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), shape)};
  };
  d.grad = [type](GradContext& g) {
    const size_t n = g.op().inputs.size();
    if (!isFloatingPoint(g.inputInfo(0).dataType())) return;
    for (size_t i = 0; i < n; ++i) {
      if (!g.needsGrad(i)) continue;
      if (n == 1) {
        g.setGradIn(0, g.gradOut(0));
        continue;
      }
      std::vector<TensorId> in{g.gradOut(0), g.output(0), g.input(i)};
      for (size_t j = 0; j < i; ++j) in.push_back(g.input(j));
      TensorId gx = g.emit("MaxMinGrad", in);
      g.setGradIn(i, g.reduceToShape(gx, g.inputInfo(i).shape()));
    }
  };
  return d;
}
XT_REGISTER_OP(maxMin("Max"));
XT_REGISTER_OP(maxMin("Min"));

// MaxMinGrad(gy, y, x_i, x_0, ..., x_{i-1}) = gy where x_i == y and no earlier x_j == y; at gy's
// shape (the x's broadcast to it).
XT_REGISTER_OP([] {
  OpDef d{.type = "MaxMinGrad", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = -1};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    if (ctx.input(1).shape() != gy.shape()) ctx.fail("y and gy have different shapes");
    for (size_t i = 2; i < ctx.numInputs(); ++i) {
      if (broadcastShapes(ctx, ctx.input(i).shape(), gy.shape()) != gy.shape()) {
        ctx.fail("input {} is {}, which does not broadcast to {}", i, ctx.input(i).toString(),
                 shapeToString(gy.shape()));
      }
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

// ---- PRelu

// PRelu(X, slope): slope broadcasts to X (unidirectionally). Gradients for both via PReluGrad.
XT_REGISTER_OP([] {
  OpDef d{.type = "PRelu", .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    requireFloat(ctx, 0, "X");
    requireSameType(ctx, 0, 1);
    const Shape& x = ctx.input(0).shape();
    if (broadcastShapes(ctx, x, ctx.input(1).shape()) != x) {
      ctx.fail("slope {} does not broadcast to X {} (unidirectional broadcasting)",
               ctx.input(1).toString(), ctx.input(0).toString());
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    auto gs = g.emitMulti("PReluGrad", {g.gradOut(0), g.input(0), g.input(1)}, 2);
    if (g.needsGrad(0)) g.setGradIn(0, gs[0]);
    if (g.needsGrad(1)) g.setGradIn(1, g.reduceToShape(gs[1], g.inputInfo(1).shape()));
  };
  return d;
}());

// PReluGrad(gy, x, slope) -> (gx = gy (x > 0 ? 1 : slope), gslope = x > 0 ? 0 : gy x), both at x's
// shape.
XT_REGISTER_OP([] {
  OpDef d{.type = "PReluGrad",
          .domain = kXtrainDomain,
          .minInputs = 3,
          .maxInputs = 3,
          .minOutputs = 2,
          .maxOutputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    if (ctx.input(1).shape() != gy.shape()) ctx.fail("x and gy have different shapes");
    return std::vector<TensorInfo>{gy, gy};
  };
  return d;
}());

// ---- Mod

// Mod(A, B) with numpy broadcasting. fmod = 0: the result has the divisor's sign (Python's %);
// fmod = 1: C's fmod, the dividend's sign. ONNX asks for fmod = 1 with floating point; PopART
// also takes fmod = 0 there (as ai.graphcore Remainder), and so does xtrain. Integer division by
// zero is an error at run time. Gradient (floating point): dA = gy, dB = -gy q with q = floor(A/B)
// (fmod 0) or trunc(A/B) (fmod 1).
XT_REGISTER_OP([] {
  OpDef d{.type = "Mod", .minInputs = 2, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph&) {
    try {
      op.attrs.set("fmod", op.attrs.getInt("fmod", 0));
    } catch (const error& e) {
      throw error("{}: {}", op.describe(), e.what());
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    requireNumeric(ctx, 0, "A");
    requireSameType(ctx, 0, 1);
    const int64_t fmod = ctx.attrs().getInt("fmod");
    if (fmod != 0 && fmod != 1) ctx.fail("attribute fmod is {}, expected 0 or 1", fmod);
    const TensorInfo& a = ctx.input(0);
    return std::vector<TensorInfo>{
        TensorInfo(a.dataType(), broadcastShapes(ctx, a.shape(), ctx.input(1).shape()))};
  };
  d.grad = [](GradContext& g) {
    if (!isFloatingPoint(g.inputInfo(0).dataType())) return;
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) g.setGradIn(0, g.reduceToShape(gy, g.inputInfo(0).shape()));
    if (g.needsGrad(1)) {
      // The grad op shared with ai.graphcore Fmod/Remainder (trunc or floor quotient).
      Attributes a;
      a.set("fmod", g.attrs().getInt("fmod"));
      TensorId gb = g.emit("ModGradDivisor", {gy, g.input(0), g.input(1)}, a);
      g.setGradIn(1, g.reduceToShape(gb, g.inputInfo(1).shape()));
    }
  };
  return d;
}());

// ModGradDivisor is registered with ai.graphcore Remainder/Fmod (graphcore_ops.cpp).

// ---- Where

// Where(condition, X, Y): condition BOOL, X and Y of one type, all three broadcast together.
// Gradients: dX = Where(c, gy, 0), dY = Where(c, 0, gy), summed down to each input's shape.
XT_REGISTER_OP([] {
  OpDef d{.type = "Where", .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    if (ctx.input(0).dataType() != DataType::BOOL) {
      ctx.fail("input 0 (condition) is {}, expected BOOL", ctx.input(0).toString());
    }
    requireSameType(ctx, 1, 2);
    const DataType t = ctx.input(1).dataType();
    if (dataTypeSize(t) == 0) ctx.fail("element type {} is not supported", dataTypeName(t));
    Shape s = broadcastShapes(ctx, ctx.input(0).shape(), ctx.input(1).shape());
    s = broadcastShapes(ctx, s, ctx.input(2).shape());
    return std::vector<TensorInfo>{TensorInfo(t, s)};
  };
  d.grad = [](GradContext& g) {
    const DataType t = g.outputInfo(0).dataType();
    if (!isFloatingPoint(t)) return;
    const TensorId& gy = g.gradOut(0);
    const TensorId zero = g.scalar(0.0f, t);
    if (g.needsGrad(1)) {
      TensorId gx = g.emit("Where", {g.input(0), gy, zero}, {}, kOnnxDomain);
      g.setGradIn(1, g.reduceToShape(gx, g.inputInfo(1).shape()));
    }
    if (g.needsGrad(2)) {
      TensorId gx = g.emit("Where", {g.input(0), zero, gy}, {}, kOnnxDomain);
      g.setGradIn(2, g.reduceToShape(gx, g.inputInfo(2).shape()));
    }
  };
  return d;
}());

// ---- Comparisons and logical ops

// A comparison: A and B of one numeric type (BOOL too for Equal), broadcast; output BOOL.
OpDef comparison(const std::string& type, bool allowBool) {
  OpDef d{.type = type, .minInputs = 2, .maxInputs = 2};
  d.infer = [allowBool](const ShapeContext& ctx) {
    if (!(allowBool && ctx.input(0).dataType() == DataType::BOOL)) requireNumeric(ctx, 0, "A");
    requireSameType(ctx, 0, 1);
    return std::vector<TensorInfo>{TensorInfo(
        DataType::BOOL, broadcastShapes(ctx, ctx.input(0).shape(), ctx.input(1).shape()))};
  };
  return d;
}
XT_REGISTER_OP(comparison("Equal", true));
XT_REGISTER_OP(comparison("Less", false));
XT_REGISTER_OP(comparison("LessOrEqual", false));
XT_REGISTER_OP(comparison("Greater", false));
XT_REGISTER_OP(comparison("GreaterOrEqual", false));

void requireBool(const ShapeContext& ctx, size_t i) {
  if (ctx.input(i).dataType() != DataType::BOOL) {
    ctx.fail("input {} is {}, expected BOOL", i, ctx.input(i).toString());
  }
}

OpDef logical(const std::string& type) {
  OpDef d{.type = type, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    requireBool(ctx, 0);
    requireBool(ctx, 1);
    return std::vector<TensorInfo>{TensorInfo(
        DataType::BOOL, broadcastShapes(ctx, ctx.input(0).shape(), ctx.input(1).shape()))};
  };
  return d;
}
XT_REGISTER_OP(logical("And"));
XT_REGISTER_OP(logical("Or"));
XT_REGISTER_OP(logical("Xor"));

XT_REGISTER_OP([] {
  OpDef d{.type = "Not"};
  d.infer = [](const ShapeContext& ctx) {
    requireBool(ctx, 0);
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
