// PopART's ai.graphcore Atan2(Y, X): the angle theta in (-pi, pi] of the point (X, Y), elementwise
// with numpy broadcasting, on FLOAT / FLOAT16 tensors of one type (FLOAT16 runs promoted).
//
// Gradient (PopART's Atan2Arg0Grad / Atan2Arg1Grad): with r2 = X^2 + Y^2,
//   dY = gz X / r2,   dX = -gz Y / r2,
// each summed over the dimensions broadcasting added to that input. One ai.xtrain Atan2Grad op per
// input computes the broadcast-shaped term in one pass (composing it from Mul/Add/Div would take
// four kernels and their temporaries); reduceToShape then sums it down.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

XT_REGISTER_OP([] {
  OpDef d{.type = "Atan2", .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "Y");
    ctx.requireFloatOrHalf(1, "X");
    const TensorInfo& y = ctx.input(0);
    const TensorInfo& x = ctx.input(1);
    if (y.dataType() != x.dataType()) {
      ctx.fail("input 0 (Y) is {} and input 1 (X) is {}; expected one element type", y.toString(),
               x.toString());
    }
    return std::vector<TensorInfo>{
        TensorInfo(y.dataType(), broadcastShapes(ctx, y.shape(), x.shape()))};
  };
  d.grad = [](GradContext& g) {
    for (size_t i = 0; i < 2; ++i) {
      if (!g.needsGrad(i)) continue;
      Attributes a;
      a.set("wrt", static_cast<int64_t>(i));
      const TensorId term = g.emit("Atan2Grad", {g.gradOut(0), g.input(0), g.input(1)}, a);
      g.setGradIn(i, g.reduceToShape(term, g.inputInfo(i).shape()));
    }
  };
  return d;
}());

// Atan2Grad(gz, Y, X) with attribute wrt (0: Y, 1: X) -> gz X / r2 or -gz Y / r2, in gz's shape
// (Atan2's output shape, to which Y and X broadcast).
XT_REGISTER_OP([] {
  OpDef d{.type = "Atan2Grad", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gz = ctx.input(0);
    const int64_t wrt = ctx.attrs().getInt("wrt");
    if (wrt != 0 && wrt != 1) ctx.fail("attribute wrt is {}, expected 0 (Y) or 1 (X)", wrt);
    const Shape both = broadcastShapes(ctx, ctx.input(1).shape(), ctx.input(2).shape());
    if (broadcastShapes(ctx, both, gz.shape()) != gz.shape()) {
      ctx.fail("Y {} and X {} do not broadcast to the gradient {}", ctx.input(1).toString(),
               ctx.input(2).toString(), gz.toString());
    }
    return std::vector<TensorInfo>{gz};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
