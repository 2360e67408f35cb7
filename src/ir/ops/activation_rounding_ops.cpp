// PopART's ai.graphcore elementwise ops Swish, GeluErf, NearbyInt and IncrementMod: y = f(x) with
// x's type and shape.
//
//   Swish(x)        x sigmoid(x) (PyTorch's SiLU). Gradient: the one-pass ai.xtrain
//                   SwishGrad(gy, x) = gy s (1 + x (1 - s)), s = sigmoid(x).
//   GeluErf(x)      the exact GELU, x (1 + erf(x / sqrt 2)) / 2 (ai.graphcore Gelu is the tanh
//                   approximation). Gradient: GeluGrad with approximate "none", as ai.xtrain Gelu.
//   NearbyInt(x)    to the nearest integer in the default rounding mode, halves to even (what the
//                   IPU's nearbyint does). Zero gradient, as PopART's one-way op and Round.
//   IncrementMod(x) fmod(x + increment, modulus) in x's type (attributes increment and modulus,
//                   floats, required): C's remainder, with the dividend's sign, as PopART's and
//                   numpy's fmod. UINT32 and INT32 wrap as their C types do. No gradient (PopART
//                   has none; it counts steps).
// Swish, GeluErf and NearbyInt take FLOAT / FLOAT16 (FLOAT16 runs promoted); IncrementMod also
// INT32 and UINT32, PopART's types.
#include <cmath>
#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

std::vector<TensorInfo> inferSameFloat(const ShapeContext& ctx) {
  ctx.requireFloatOrHalf(0, "X");
  return {ctx.input(0)};
}

XT_REGISTER_OP([] {
  OpDef d{.type = "Swish", .domain = kGraphcoreDomain};
  d.infer = inferSameFloat;
  d.grad = [](GradContext& g) { g.setGradIn(0, g.emit("SwishGrad", {g.gradOut(0), g.input(0)})); };
  return d;
}());

// SwishGrad(gy, x) -> gx with gy's info; x must have gy's shape.
XT_REGISTER_OP([] {
  OpDef d{.type = "SwishGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    if (ctx.input(1).shape() != gy.shape()) {
      ctx.fail("input 1 (x) is {} but the incoming gradient is {}; expected equal shapes",
               ctx.input(1).toString(), gy.toString());
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d{.type = "GeluErf", .domain = kGraphcoreDomain};
  d.infer = inferSameFloat;
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("approximate", std::string("none"));
    g.setGradIn(0, g.emit("GeluGrad", {g.gradOut(0), g.input(0)}, a));
  };
  return d;
}());

// The zero gradient is a zero tensor (an Init), so training through NearbyInt does not fail.
XT_REGISTER_OP([] {
  OpDef d{.type = "NearbyInt", .domain = kGraphcoreDomain};
  d.infer = inferSameFloat;
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

XT_REGISTER_OP([] {
  OpDef d{.type = "IncrementMod", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    const DataType t = x.dataType();
    if (!isFloatingPoint(t) && t != DataType::INT32 && t != DataType::UINT32) {
      ctx.fail("input 0 (X) is {}, expected FLOAT, FLOAT16, INT32 or UINT32", x.toString());
    }
    for (const char* name : {"increment", "modulus"}) {
      if (!ctx.attrs().has(name)) ctx.fail("attribute '{}' (a float) is required", name);
    }
    const double increment = ctx.attrs().getFloat("increment");
    const double modulus = ctx.attrs().getFloat("modulus");
    if (!std::isfinite(increment) || !std::isfinite(modulus) || modulus == 0.0) {
      ctx.fail("attributes increment = {} and modulus = {}; expected finite values, modulus != 0",
               increment, modulus);
    }
    const bool whole = increment == std::trunc(increment) && modulus == std::trunc(modulus);
    if (!isFloatingPoint(t) && (!whole || (t == DataType::UINT32 && modulus < 0))) {
      ctx.fail("attributes increment = {} and modulus = {} on {}: expected whole numbers{}",
               increment, modulus, x.toString(), t == DataType::UINT32 ? ", modulus > 0" : "");
    }
    return std::vector<TensorInfo>{x};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
