// The inverse and hyperbolic trigonometric functions and Tan (ai.onnx Asin, Acos, Atan, Sinh,
// Cosh, Tan, Asinh, Acosh, Atanh) and PopART's ai.graphcore Expm1 and Log1p: y = f(x) on
// FLOAT / FLOAT16 tensors (FLOAT16 runs promoted), with x's type and shape.
//
// Gradients: one-pass ai.xtrain grad ops <Type>Grad(gy, z) -> gx, as the activations of
// elementwise_ops.cpp do (composing them from Mul/Div/Sqrt would take two to four kernels and their
// temporaries). z is the input x, except for Tan and Expm1, whose derivatives are cheapest from the
// output y (1 + y^2 and y + 1, as PyTorch computes them):
//   Asin  gy / sqrt(1 - x^2)      Acos  -gy / sqrt(1 - x^2)     Atan  gy / (1 + x^2)
//   Sinh  gy cosh(x)              Cosh  gy sinh(x)              Tan   gy (1 + y^2)
//   Asinh gy / sqrt(x^2 + 1)      Acosh gy / (sqrt(x-1) sqrt(x+1))  Atanh gy / (1 - x^2)
//   Expm1 gy (y + 1)              Log1p gy / (1 + x)
// Outside a function's domain (|x| > 1 for Asin, x < 1 for Acosh, ...) the forward gives NaN, as
// std:: and PopART's IPU do; the gradient there is NaN too.
//
// Also ai.onnx Shrink (opset 9): y = x + bias for x < -lambd, x - bias for x > lambd, else 0
// (attributes bias, default 0, and lambd, default 0.5; bias 0 is PyTorch's Hardshrink, bias = lambd
// its Softshrink). Its gradient ShrinkGrad(gy, x) is gy where |x| > lambd, 0 where |x| < lambd
// and gy/2 where |x| == lambd, as PopART computes it (gy (1 + sign(|x| - lambd)) / 2).
//
// And ai.onnx IsNaN and IsInf (BOOL outputs, no gradient).
#include <cmath>
#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

OpDef mathUnary(const std::string& type, const std::string& domain, bool gradFromOutput) {
  OpDef d{.type = type, .domain = domain};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "X");
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [type, gradFromOutput](GradContext& g) {
    g.setGradIn(0,
                g.emit(type + "Grad", {g.gradOut(0), gradFromOutput ? g.output(0) : g.input(0)}));
  };
  return d;
}

// <Type>Grad(gy, z) -> gx with gy's info; z must have gy's shape.
OpDef mathUnaryGrad(const std::string& type) {
  OpDef d{.type = type + "Grad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    if (ctx.input(1).shape() != gy.shape()) {
      ctx.fail("input 1 is {} but the incoming gradient is {}; expected equal shapes",
               ctx.input(1).toString(), gy.toString());
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}

#define XT_MATH_UNARY(Type, domain, fromOutput)         \
  XT_REGISTER_OP(mathUnary(#Type, domain, fromOutput)); \
  XT_REGISTER_OP(mathUnaryGrad(#Type))

XT_MATH_UNARY(Asin, kOnnxDomain, false);
XT_MATH_UNARY(Acos, kOnnxDomain, false);
XT_MATH_UNARY(Atan, kOnnxDomain, false);
XT_MATH_UNARY(Sinh, kOnnxDomain, false);
XT_MATH_UNARY(Cosh, kOnnxDomain, false);
XT_MATH_UNARY(Tan, kOnnxDomain, true);
XT_MATH_UNARY(Asinh, kOnnxDomain, false);
XT_MATH_UNARY(Acosh, kOnnxDomain, false);
XT_MATH_UNARY(Atanh, kOnnxDomain, false);
XT_MATH_UNARY(Expm1, kGraphcoreDomain, true);
XT_MATH_UNARY(Log1p, kGraphcoreDomain, false);

#undef XT_MATH_UNARY

// Fills attribute `name` with `value` when absent; an int-typed value becomes a float.
void defaultFloat(Op& op, const char* name, float value) {
  try {
    op.attrs.set(name, op.attrs.has(name) ? op.attrs.getFloat(name) : value);
  } catch (const error& e) {
    throw error("{}: {}", op.describe(), e.what());
  }
}

XT_REGISTER_OP([] {
  OpDef d{.type = "Shrink"};
  d.canonicalize = [](Op& op, const Graph&) {
    defaultFloat(op, "bias", 0.0f);
    defaultFloat(op, "lambd", 0.5f);
  };
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "input");
    const float lambd = ctx.attrs().getFloat("lambd");
    if (!(lambd >= 0.0f) || !std::isfinite(ctx.attrs().getFloat("bias"))) {
      ctx.fail("attributes lambd = {} and bias = {}: expected lambd >= 0 and a finite bias", lambd,
               ctx.attrs().getFloat("bias"));
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    g.setGradIn(0, g.emit("ShrinkGrad", {g.gradOut(0), g.input(0)}, g.attrs()));
  };
  return d;
}());
XT_REGISTER_OP(mathUnaryGrad("Shrink"));

// IsNaN (opset 9) and IsInf (opset 10; attributes detect_negative and detect_positive, default 1):
// a BOOL tensor of x's shape, true where x is NaN, or +-inf (of the signs asked for). FLOAT and
// FLOAT16 (DOUBLE and BFLOAT16 are not device types). No gradient: the output is BOOL.
OpDef isNotFinite(const std::string& type) {
  OpDef d{.type = type};
  d.canonicalize = [type](Op& op, const Graph&) {
    if (type != "IsInf") return;
    for (const char* name : {"detect_negative", "detect_positive"}) {
      const int64_t v = op.attrs.getInt(name, 1);
      if (v != 0 && v != 1) throw error("{}: attribute {} is {}; expected 0 or 1", op.describe(), name, v);
      op.attrs.set(name, v);
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "X");
    return std::vector<TensorInfo>{TensorInfo(DataType::BOOL, ctx.input(0).shape())};
  };
  return d;
}
XT_REGISTER_OP(isNotFinite("IsNaN"));
XT_REGISTER_OP(isNotFinite("IsInf"));

}  // namespace
}  // namespace xtrain::ir
