// Normalisation over groups of channels: InstanceNormalization (ai.onnx) and PopART's
// GroupNormalization (ai.graphcore), both differentiated through one GroupNormGrad (ai.xtrain).
// InstanceNormalization is GroupNormalization with one group per channel.
#include "ir/op_registry.hpp"
#include "ir/ops/norm_grad.hpp"

namespace xtrain::ir {
namespace {

// X FLOAT/FLOAT16 [N, C, D1..Dk] with rank >= minRank; scale and bias [C] of X's type.
void checkGroupNormInputs(const ShapeContext& ctx, int64_t minRank, const char* scaleName,
                          const char* biasName) {
  ctx.requireFloatOrHalf(0, "X");
  const TensorInfo& x = ctx.input(0);
  if (x.rank() < minRank) {
    ctx.fail("X is {}; expected rank >= {} (N x C{})", x.toString(), minRank,
             minRank > 2 ? " x D1 x ... x Dk" : " [x D1 x ... x Dk]");
  }
  const char* names[] = {"X", scaleName, biasName};
  for (size_t i = 1; i < 3; ++i) {
    const TensorInfo& t = ctx.input(i);
    if (t.dataType() != x.dataType() || t.shape() != Shape{x.dim(1)}) {
      ctx.fail("{} is {}; expected {}[{}] (one value per channel of X {})", names[i], t.toString(),
               dataTypeName(x.dataType()), x.dim(1), x.toString());
    }
  }
}

// Sets the gradients of X, scale and bias from GroupNormGrad's outputs.
void setGroupNormGrads(GradContext& g, std::vector<TensorId> ins, int64_t groups, float epsilon,
                       int64_t strided = 0) {
  Attributes a;
  a.set("num_groups", groups);
  a.set("epsilon", epsilon);
  if (strided != 0) a.set("strided_channel_grouping", strided);
  auto outs = g.emitMulti("GroupNormGrad", std::move(ins), 3, a);
  for (size_t i = 0; i < 3; ++i) {
    if (g.needsGrad(i)) g.setGradIn(i, outs[i]);
  }
}

// InstanceNormalization (ai.onnx; one definition from opset 6 to 17, so every opset 7-17 is the
// same). Canonical form: inputs input (FLOAT/FLOAT16 [N, C, D1..Dk], rank >= 3), scale [C], B [C];
// attribute epsilon (set, default 1e-5). Output Y = (x - mean) / sqrt(var + epsilon) * scale + B
// with mean and the population variance over D1..Dk of each (n, c). Gradients for input, scale and
// B through GroupNormGrad with num_groups = C (statistics recomputed).
XT_REGISTER_OP([] {
  OpDef d{.type = "InstanceNormalization", .minInputs = 3, .maxInputs = 3};
  d.canonicalize = [](Op& op, const Graph&) {
    op.attrs.set("epsilon", op.attrs.getFloat("epsilon", 1e-5f));
  };
  d.infer = [](const ShapeContext& ctx) {
    checkGroupNormInputs(ctx, 3, "scale", "B");
    if (!(ctx.attrs().getFloat("epsilon") >= 0.0f)) {
      ctx.fail("epsilon is {}; expected a value >= 0", ctx.attrs().getFloat("epsilon"));
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  d.grad = [](GradContext& g) {
    setGroupNormGrads(g, {g.gradOut(0), g.input(0), g.input(1)}, g.inputInfo(0).dim(1),
                      g.attrs().getFloat("epsilon"));
  };
  return d;
}());

// GroupNormalization (ai.graphcore version 1; PopART's builder.aiGraphcore.groupnormalization).
// Canonical form: inputs X (FLOAT/FLOAT16 [N, C, D1..Dk], rank >= 2), scale [C], bias [C];
// attributes num_groups (required, >= 1, divides C) and epsilon (set, default 1e-5). Outputs Y,
// mean and invStdDev (both optional, [N * num_groups], X's type): the statistics of each group of
// C / num_groups consecutive channels of each sample, invStdDev = 1 / sqrt(population variance +
// epsilon); Y = (x - mean) * invStdDev * scale[c] + bias[c]. Attribute strided_channel_grouping
// (0 or 1, default 0; the session sets 1 under SessionOptions.groupNormStridedChannelGrouping):
// group g holds channels g, g + num_groups, g + 2 * num_groups, ... instead, as Poplar's strided
// grouping. Gradients for X, scale and bias
// through GroupNormGrad, which uses the saved statistics when the op outputs them; gradients
// arriving at mean and invStdDev reach X too.
XT_REGISTER_OP([] {
  OpDef d{.type = "GroupNormalization",
          .domain = kGraphcoreDomain,
          .minInputs = 3,
          .maxInputs = 3,
          .minOutputs = 1,
          .maxOutputs = 3};
  d.canonicalize = [](Op& op, const Graph&) {
    if (!op.attrs.has("num_groups")) {
      throw error("{}: attribute num_groups is required", op.describe());
    }
    op.attrs.set("num_groups", op.attrs.getInt("num_groups"));
    op.attrs.set("epsilon", op.attrs.getFloat("epsilon", 1e-5f));
    const int64_t strided = op.attrs.getInt("strided_channel_grouping", 0);
    if (strided != 0 && strided != 1) {
      throw error("{}: attribute strided_channel_grouping is {}; expected 0 or 1", op.describe(),
                  strided);
    }
    op.attrs.set("strided_channel_grouping", strided);
  };
  d.infer = [](const ShapeContext& ctx) {
    checkGroupNormInputs(ctx, 2, "scale", "bias");
    const TensorInfo& x = ctx.input(0);
    const int64_t groups = ctx.attrs().getInt("num_groups");
    if (groups < 1 || x.dim(1) % groups != 0) {
      ctx.fail("num_groups is {}; expected a divisor >= 1 of the {} channels of X {}", groups,
               x.dim(1), x.toString());
    }
    if (!(ctx.attrs().getFloat("epsilon") >= 0.0f)) {
      ctx.fail("epsilon is {}; expected a value >= 0", ctx.attrs().getFloat("epsilon"));
    }
    const TensorInfo stat(x.dataType(), {x.dim(0) * groups});
    return std::vector<TensorInfo>{x, stat, stat};
  };
  d.grad = [](GradContext& g) {
    const Op& op = g.op();
    const bool saved = op.hasOutput(1) && op.hasOutput(2);
    setGroupNormGrads(
        g,
        {g.gradOutOrZeros(0), g.input(0), g.input(1), saved ? g.output(1) : TensorId(),
         saved ? g.output(2) : TensorId(), op.hasOutput(1) ? g.gradOut(1) : TensorId(),
         op.hasOutput(2) ? g.gradOut(2) : TensorId()},
        g.attrs().getInt("num_groups"), g.attrs().getFloat("epsilon"),
        g.attrs().getInt("strided_channel_grouping", 0));
  };
  return d;
}());

// GroupNormGrad (ai.xtrain): inputs dY, X, scale, mean?, invStdDev?, dMean?, dInvStdDev? (the
// statistics [N * num_groups], recomputed from X when absent); attributes num_groups, epsilon and
// strided_channel_grouping (as GroupNormalization's).
// Outputs dX (X's info), dScale and dBias ([C]).
XT_REGISTER_OP(normGradDef("GroupNormGrad", [](const ShapeContext& ctx) {
  const TensorInfo& x = ctx.input(1);
  if (x.rank() < 2) ctx.fail("X is {}; expected rank >= 2", x.toString());
  const int64_t groups = ctx.attrs().getInt("num_groups");
  if (groups < 1 || x.dim(1) % groups != 0) {
    ctx.fail("num_groups {} does not divide the channels of X {}", groups, x.toString());
  }
  checkNormGradInputs(ctx, {x.dim(0) * groups}, "mean", "invStdDev");
  const TensorInfo perChannel(x.dataType(), {x.dim(1)});
  return std::vector<TensorInfo>{x, perChannel, perChannel};
}));

}  // namespace
}  // namespace xtrain::ir
