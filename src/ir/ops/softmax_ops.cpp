// Softmax and LogSoftmax, and their ai.xtrain gradients SoftmaxGrad and LogSoftmaxGrad.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

// Canonical form: attributes
//   axis       int (may be negative; kernels normalise it against the input's rank);
//   coerce_2d  int 0/1.
// coerce_2d = 0 is opset-13 semantics: normalise along the single dimension `axis` (default -1).
// coerce_2d = 1 is opset 11/12 semantics: the input is viewed as a 2-D matrix [prod(dims[:axis]),
// prod(dims[axis:])] and each row is normalised (default axis 1).
// Internal ops (opset 0) get opset-13 semantics. An op that already has coerce_2d is left as it is.
void canonicalizeSoftmax(Op& op, const Graph&) {
  if (op.attrs.has("coerce_2d")) {
    if (!op.attrs.has("axis")) op.attrs.set("axis", int64_t{-1});
    return;
  }
  const bool legacy = op.opset > 0 && op.opset < 13;
  op.attrs.set("coerce_2d", int64_t{legacy ? 1 : 0});
  if (!op.attrs.has("axis")) op.attrs.set("axis", int64_t{legacy ? 1 : -1});
}

// Checks the axis and coerce_2d attributes against input `i`'s rank.
void checkAxis(const ShapeContext& ctx, size_t i) {
  const int64_t coerce = ctx.attrs().getInt("coerce_2d");
  if (coerce != 0 && coerce != 1) ctx.fail("coerce_2d is {}, expected 0 or 1", coerce);
  const TensorInfo& x = ctx.input(i);
  normalizeAxis(ctx, ctx.attrs().getInt("axis"), x.rank());
}

OpDef softmax(const std::string& type, const std::string& gradType) {
  OpDef d{.type = type};
  d.canonicalize = canonicalizeSoftmax;
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    if (!isFloatingPoint(x.dataType())) {
      ctx.fail("input 0 is {}, expected a floating-point tensor", x.toString());
    }
    checkAxis(ctx, 0);
    return std::vector<TensorInfo>{x};
  };
  d.grad = [gradType](GradContext& g) {
    Attributes a;
    a.set("axis", g.attrs().getInt("axis"));
    a.set("coerce_2d", g.attrs().getInt("coerce_2d"));
    g.setGradIn(0, g.emit(gradType, {g.gradOut(0), g.output(0)}, a));
  };
  return d;
}

XT_REGISTER_OP(softmax("Softmax", "SoftmaxGrad"));
XT_REGISTER_OP(softmax("LogSoftmax", "LogSoftmaxGrad"));

// SoftmaxGrad(gy, y):    gx = y * (gy - sum(gy * y))   (sums along the forward op's axis / rows)
// LogSoftmaxGrad(gy, y): gx = gy - exp(y) * sum(gy)
// Same axis and coerce_2d attributes as the forward op.
OpDef softmaxGrad(const std::string& type) {
  OpDef d{.type = type, .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.canonicalize = canonicalizeSoftmax;
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    const TensorInfo& y = ctx.input(1);
    if (gy != y)
      ctx.fail("gradient is {} but the output is {}; expected equal", gy.toString(), y.toString());
    checkAxis(ctx, 1);
    return std::vector<TensorInfo>{gy};
  };
  return d;
}

XT_REGISTER_OP(softmaxGrad("SoftmaxGrad"));
XT_REGISTER_OP(softmaxGrad("LogSoftmaxGrad"));

}  // namespace
}  // namespace xtrain::ir
