// Internal ops inserted by optimizers. They write their inputs in place and have no outputs; they run in the
// Accumulate and Update phases, after every reader of the tensors they modify.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

std::vector<TensorInfo> noOutputs(const ShapeContext&) { return {}; }

void requireSameInfo(const ShapeContext& ctx, size_t a, size_t b) {
  if (ctx.input(a) != ctx.input(b)) {
    ctx.fail("input {} is {} but input {} is {}; they must match", a, ctx.input(a).toString(), b,
             ctx.input(b).toString());
  }
}

// SGDUpdate(weight, grad, hyper[6] = {lr, wd, mm, dm, vs, gradScale}, [velocity]); attributes nesterov (0/1),
// zeroGrad (0/1: clear grad after use, for accumulators). Modifies weight, velocity and (zeroGrad) grad.
XT_REGISTER_OP([] {
  OpDef d;
  d.type = "SGDUpdate";
  d.domain = kXtrainDomain;
  d.minInputs = 3;
  d.maxInputs = 4;
  d.minOutputs = d.maxOutputs = 0;
  d.modifiesInputs = {0, 1, 3};
  d.infer = [](const ShapeContext& ctx) {
    requireSameInfo(ctx, 0, 1);
    if (ctx.hasInput(3)) requireSameInfo(ctx, 0, 3);
    if (ctx.input(2) != TensorInfo(DataType::FLOAT, {6})) {
      ctx.fail("hyperparameter tensor is {}, expected FLOAT[6]", ctx.input(2).toString());
    }
    return noOutputs(ctx);
  };
  return d;
}());

// AccumulateGrad(accumulator, grad, index); attribute mode "sum" (acc += g) or "running"
// (acc += (g - acc) / (index + 1), a running mean over micro-batches). Modifies the accumulator.
XT_REGISTER_OP([] {
  OpDef d;
  d.type = "AccumulateGrad";
  d.domain = kXtrainDomain;
  d.minInputs = d.maxInputs = 3;
  d.minOutputs = d.maxOutputs = 0;
  d.modifiesInputs = {0};
  d.infer = [](const ShapeContext& ctx) {
    requireSameInfo(ctx, 0, 1);
    const std::string mode = ctx.attrs().getString("mode");
    if (mode != "sum" && mode != "running") ctx.fail("mode '{}' must be sum or running", mode);
    return noOutputs(ctx);
  };
  return d;
}());

// CopyVarUpdate(dst, src): dst <- src, in place (batch-norm running statistics). Modifies dst.
XT_REGISTER_OP([] {
  OpDef d;
  d.type = "CopyVarUpdate";
  d.domain = kXtrainDomain;
  d.minInputs = d.maxInputs = 2;
  d.minOutputs = d.maxOutputs = 0;
  d.modifiesInputs = {0};
  d.infer = [](const ShapeContext& ctx) {
    requireSameInfo(ctx, 0, 1);
    return noOutputs(ctx);
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
