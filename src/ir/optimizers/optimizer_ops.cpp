// Internal ops inserted by optimizers. They write their inputs in place and have no outputs; they
// run in the Accumulate and Update phases, after every reader of the tensors they modify.
#include "common/optimizer_hyper.hpp"
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

// An optimizer op: ai.xtrain, no outputs, inputs `modifies` written in place; `check` validates
// the inputs and attributes.
OpDef inPlaceOp(const char* type, int minInputs, int maxInputs, std::vector<int> modifies,
                std::function<void(const ShapeContext&)> check) {
  return OpDef{.type = type,
               .domain = kXtrainDomain,
               .minInputs = minInputs,
               .maxInputs = maxInputs,
               .minOutputs = 0,
               .maxOutputs = 0,
               .infer =
                   [check = std::move(check)](const ShapeContext& ctx) {
                     check(ctx);
                     return std::vector<TensorInfo>{};
                   },
               .modifiesInputs = std::move(modifies)};
}

void requireSameInfo(const ShapeContext& ctx, size_t a, size_t b) {
  if (ctx.input(a) != ctx.input(b)) {
    ctx.fail("input {} is {} but input {} is {}; they must match", a, ctx.input(a).toString(), b,
             ctx.input(b).toString());
  }
}

// Weights, gradients and state may differ in type (FLOAT16 weights have FLOAT gradients after the
// reduction, and state may be FLOAT16 or FLOAT), not in shape.
void requireSameShape(const ShapeContext& ctx, size_t a, size_t b) {
  if (ctx.input(a).shape() != ctx.input(b).shape()) {
    ctx.fail("input {} is {} but input {} is {}; their shapes must match", a,
             ctx.input(a).toString(), b, ctx.input(b).toString());
  }
}

// Input 2 is a hyper tensor of the family's layout (common/optimizer_hyper.hpp).
template <class Slot>
void requireHyper(const ShapeContext& ctx) {
  if (ctx.input(2) != hyperTensorInfo<Slot>()) {
    ctx.fail("hyperparameter tensor is {}, expected FLOAT[{}] = {}", ctx.input(2).toString(),
             kHyperSize<Slot>, hyperLayoutText<Slot>());
  }
}

void requireScalar(const ShapeContext& ctx, size_t k, const char* what) {
  if (ctx.input(k) != TensorInfo(DataType::FLOAT, {})) {
    ctx.fail("{} (input {}) is {}, expected a FLOAT scalar", what, k, ctx.input(k).toString());
  }
}

void requireDecayMode(const ShapeContext& ctx) {
  const std::string m = ctx.attrs().getString("weightDecayMode");
  if (m != "decay" && m != "l2") ctx.fail("weightDecayMode '{}' must be decay or l2", m);
}

// Every update op's input 2 is a FLOAT hyper tensor in its family's layout, named in
// common/optimizer_hyper.hpp (SgdHyper, AdamHyper, AdaptiveHyper). Each reads GradScale
// (1/lossScaling, and 1/(af·G) for Mean-Post) and ClipFactor (the clipping factor) and uses g =
// grad · gradScale · clipFactor; attribute zeroGrad (0/1) clears grad after use (for accumulators).
// The rules are in include/xtrain/optimizer.hpp and docs/optimizers.md.

// SGDUpdate(weight, grad, hyper[7] = {gradScale, clip, lr, wd, mm, dm, vs}, [velocity]); attributes
// nesterov (0/1) and halfVelocity (0/1: the velocity is stored as FLOAT16, and the weight moves by
// the rounded value). Modifies weight, velocity and (zeroGrad) grad.
XT_REGISTER_OP(inPlaceOp("SGDUpdate", 3, 4, {0, 1, 3}, [](const ShapeContext& ctx) {
  requireSameShape(ctx, 0, 1);
  if (ctx.hasInput(3)) requireSameShape(ctx, 0, 3);
  requireHyper<SgdHyper>(ctx);
}));

// AdamUpdate(weight, grad, hyper[8] = {gradScale, clip, lr, wd, beta1, beta2, eps, mwn}, m, v,
// step, [lambNorms FLOAT[2]]); attributes mode (Adam, AdamNoBias, AdaMax, Lamb, LambNoBias),
// weightDecayMode (decay, l2). Modifies weight, grad, m, v, step. With lambNorms (Lamb on a shard)
// the weight is not moved: the update u is left in grad and the partial sums {sum w^2, sum u^2} in
// lambNorms, for LambApply once the session has summed them over the shards.
XT_REGISTER_OP(inPlaceOp("AdamUpdate", 6, 7, {0, 1, 3, 4, 5, 6}, [](const ShapeContext& ctx) {
  requireSameShape(ctx, 0, 1);
  requireSameShape(ctx, 0, 3);
  requireSameShape(ctx, 0, 4);
  requireHyper<AdamHyper>(ctx);
  requireScalar(ctx, 5, "the step count");
  requireDecayMode(ctx);
  const std::string mode = ctx.attrs().getString("mode");
  const bool lamb = mode == "Lamb" || mode == "LambNoBias";
  if (!lamb && mode != "Adam" && mode != "AdamNoBias" && mode != "AdaMax") {
    ctx.fail("mode '{}' must be Adam, AdamNoBias, AdaMax, Lamb or LambNoBias", mode);
  }
  if (ctx.hasInput(6)) {
    if (!lamb) ctx.fail("lambNorms (input 6) is for the Lamb modes only, not {}", mode);
    if (ctx.input(6) != TensorInfo(DataType::FLOAT, {2})) {
      ctx.fail("lambNorms is {}, expected FLOAT[2]", ctx.input(6).toString());
    }
  }
}));

// LambApply(weight, update, hyper[8] as AdamUpdate, lambNorms[2] = {sum w^2, sum u^2} over the
// whole weight): w <- w - lr * r * u with Lamb's trust ratio r = min(sqrt(sum w^2), mwn) / sqrt(sum
// u^2) (1 when either sum or mwn is 0). Modifies weight.
XT_REGISTER_OP(inPlaceOp("LambApply", 4, 4, {0}, [](const ShapeContext& ctx) {
  requireSameShape(ctx, 0, 1);
  requireHyper<AdamHyper>(ctx);
  if (ctx.input(3) != TensorInfo(DataType::FLOAT, {2})) {
    ctx.fail("lambNorms is {}, expected FLOAT[2]", ctx.input(3).toString());
  }
}));

// AdaptiveUpdate(weight, grad, hyper[7] = {gradScale, clip, lr, wd, alpha, mm, eps}, v1, [v2],
// [v3]); attributes mode (AdaGrad, RMSProp, CenteredRMSProp, AdaDelta), weightDecayMode (decay,
// l2), tfVariant (0 or 1: eps inside the square root; RMSProp and CenteredRMSProp only). v2 is
// required by CenteredRMSProp and AdaDelta; v3 (momentum) is optional in every mode.
// Modifies weight, grad, v1, v2, v3.
XT_REGISTER_OP(inPlaceOp("AdaptiveUpdate", 4, 6, {0, 1, 3, 4, 5}, [](const ShapeContext& ctx) {
  requireSameShape(ctx, 0, 1);
  requireSameShape(ctx, 0, 3);
  requireHyper<AdaptiveHyper>(ctx);
  requireDecayMode(ctx);
  const std::string mode = ctx.attrs().getString("mode");
  const bool needsV2 = mode == "CenteredRMSProp" || mode == "AdaDelta";
  if (!needsV2 && mode != "AdaGrad" && mode != "RMSProp") {
    ctx.fail("mode '{}' must be AdaGrad, RMSProp, CenteredRMSProp or AdaDelta", mode);
  }
  if (needsV2 != ctx.hasInput(4)) {
    ctx.fail("mode {} {} v2 (input 4)", mode, needsV2 ? "needs" : "takes no");
  }
  if (ctx.hasInput(4)) requireSameShape(ctx, 0, 4);
  if (ctx.hasInput(5)) requireSameShape(ctx, 0, 5);
  if (const int64_t tf = ctx.attrs().getInt("tfVariant", 0); tf != 0) {
    if (tf != 1) ctx.fail("tfVariant must be 0 or 1, got {}", tf);
    if (mode != "RMSProp" && mode != "CenteredRMSProp") {
      ctx.fail("tfVariant is for RMSProp and CenteredRMSProp only, not {}", mode);
    }
  }
}));

// AccumulateGrad(accumulator, grad, index); attribute mode "sum" (acc += g) or "running"
// (acc += (g - acc) / (index + 1), a running mean over micro-batches). Modifies the accumulator.
XT_REGISTER_OP(inPlaceOp("AccumulateGrad", 3, 3, {0}, [](const ShapeContext& ctx) {
  requireSameShape(ctx, 0, 1);
  const std::string mode = ctx.attrs().getString("mode");
  if (mode != "sum" && mode != "running") ctx.fail("mode '{}' must be sum or running", mode);
}));

// CopyVarUpdate(dst, src): dst <- src, in place (batch-norm running statistics). Modifies dst.
XT_REGISTER_OP(inPlaceOp("CopyVarUpdate", 2, 2, {0},
                         [](const ShapeContext& ctx) { requireSameInfo(ctx, 0, 1); }));

}  // namespace
}  // namespace xtrain::ir
