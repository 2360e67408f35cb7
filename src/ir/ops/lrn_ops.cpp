// ai.onnx LRN (opsets 1 and 13), local response normalization across channels: X is
// [N, C, D1, ..., Dk] (rank >= 3), FLOAT or FLOAT16, and
//   Y[n, c, d] = X[n, c, d] / (bias + alpha / size * S[n, c, d])^beta,
//   S[n, c, d] = sum of X[n, j, d]^2 over j in [c - floor((size-1)/2), c + ceil((size-1)/2)] ∩ [0,
//   C).
// Attributes: size (required, >= 1), alpha (default 1e-4), beta (0.75), bias (1.0); canonicalize
// fills the defaults.
//
// Gradient: ai.xtrain LRNGrad(gy, x) with the same attributes, in one pass over a scratch of the
// window sums: gx_i = gy_i s_i^-beta - 2 alpha beta / size x_i sum_{c : i in window(c)}
// gy_c x_c s_c^(-beta-1), where s = bias + alpha / size * S.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

void defaultFloat(Op& op, const char* name, float value) {
  try {
    op.attrs.set(name, op.attrs.has(name) ? op.attrs.getFloat(name) : value);
  } catch (const error& e) {
    throw error("{}: {}", op.describe(), e.what());
  }
}

XT_REGISTER_OP([] {
  OpDef d{.type = "LRN"};
  d.canonicalize = [](Op& op, const Graph&) {
    if (!op.attrs.has("size")) throw error("{}: the attribute size is required", op.describe());
    defaultFloat(op, "alpha", 1e-4f);
    defaultFloat(op, "beta", 0.75f);
    defaultFloat(op, "bias", 1.0f);
  };
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "X");
    const TensorInfo& x = ctx.input(0);
    if (x.shape().size() < 3) {
      ctx.fail("input is {}, expected rank 3 or more ([N, C, D1, ...])", x.toString());
    }
    const int64_t size = ctx.attrs().getInt("size");
    if (size < 1) ctx.fail("attribute size is {}, expected a positive integer", size);
    return std::vector<TensorInfo>{x};
  };
  d.grad = [](GradContext& g) {
    g.setGradIn(0, g.emit("LRNGrad", {g.gradOut(0), g.input(0)}, g.attrs()));
  };
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d{.type = "LRNGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    if (ctx.input(1).shape() != ctx.input(0).shape()) {
      ctx.fail("x is {} but the incoming gradient is {}; expected equal shapes",
               ctx.input(1).toString(), ctx.input(0).toString());
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
