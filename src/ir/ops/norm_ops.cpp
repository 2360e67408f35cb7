// Normalisation ops: LayerNormalization and BatchNormalization (ai.onnx), and their gradients
// LayerNormGrad and BatchNormGrad (ai.xtrain).
#include <algorithm>
#include <string>

#include "ir/op_registry.hpp"
#include "ir/ops/norm_grad.hpp"

namespace xtrain::ir {
namespace {

// The normalised shape X.shape[axis:] of LayerNormalization.
Shape normalizedShape(const Shape& x, int64_t axis) {
  return Shape(x.begin() + axis, x.end());
}

// Scale and B of LayerNormalization broadcast (numpy, one way) to the normalised shape.
void checkBroadcastsTo(const ShapeContext& ctx, size_t i, const char* name, const Shape& norm) {
  ctx.requireFloatOrHalf(i, name);
  const TensorInfo& t = ctx.input(i);
  const Shape& s = t.shape();
  bool ok = s.size() <= norm.size();
  for (size_t k = 0; ok && k < s.size(); ++k) {
    const int64_t d = s[s.size() - 1 - k];
    ok = d == 1 || d == norm[norm.size() - 1 - k];
  }
  if (!ok) {
    ctx.fail("{} is {}; it must broadcast to the normalised shape {} (X.shape[axis:])", name,
             t.toString(), shapeToString(norm));
  }
}

// LayerNormalization (ai.onnx; defined at opset 17, accepted at any opset because PopART-era
// exporters emit it earlier). Canonical form: inputs X, Scale, B (optional); attributes axis
// (normalised to [0, rank)) and epsilon (set, default 1e-5); stash_type must be 1 (FLOAT) when
// present. Outputs Y, Mean and InvStdDev (both optional, FLOAT, shape X.shape[:axis] +
// [1]*(rank-axis)). Scale and B broadcast to X.shape[axis:]. Gradients for X, Scale and B come from
// one LayerNormGrad, which uses the saved Mean/InvStdDev when the forward op produces them and
// recomputes them otherwise; gradients arriving at Mean and InvStdDev are propagated to X too.
XT_REGISTER_OP([] {
  OpDef d{.type = "LayerNormalization",
          .minInputs = 2,
          .maxInputs = 3,
          .minOutputs = 1,
          .maxOutputs = 3};
  d.canonicalize = [](Op& op, const Graph& graph) {
    ShapeContext ctx(graph, op);
    const int64_t rank = ctx.input(0).rank();
    if (rank == 0) ctx.fail("X must have rank >= 1, got {}", ctx.input(0).toString());
    op.attrs.set("axis", normalizeAxis(ctx, op.attrs.getInt("axis", -1), rank));
    op.attrs.set("epsilon", op.attrs.getFloat("epsilon", 1e-5f));
    if (op.attrs.getInt("stash_type", 1) != 1) {
      ctx.fail("stash_type {} is not supported; statistics are computed in FLOAT (stash_type 1)",
               op.attrs.getInt("stash_type"));
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "X");
    const TensorInfo& x = ctx.input(0);
    const int64_t axis = ctx.attrs().getInt("axis");
    const Shape norm = normalizedShape(x.shape(), axis);
    checkBroadcastsTo(ctx, 1, "Scale", norm);
    if (ctx.hasInput(2)) checkBroadcastsTo(ctx, 2, "B", norm);
    Shape stat = x.shape();
    std::fill(stat.begin() + axis, stat.end(), 1);
    const TensorInfo statInfo(x.dataType(), stat);
    return std::vector<TensorInfo>{x, statInfo, statInfo};
  };
  d.grad = [](GradContext& g) {
    const Op& op = g.op();
    Attributes a;
    a.set("axis", g.attrs().getInt("axis"));
    a.set("epsilon", g.attrs().getFloat("epsilon"));
    const bool saved = op.hasOutput(1) && op.hasOutput(2);
    std::vector<TensorId> ins = {g.gradOutOrZeros(0),
                                 g.input(0),
                                 g.input(1),
                                 saved ? g.output(1) : TensorId(),
                                 saved ? g.output(2) : TensorId(),
                                 op.hasOutput(1) ? g.gradOut(1) : TensorId(),
                                 op.hasOutput(2) ? g.gradOut(2) : TensorId()};
    auto outs = g.emitMulti("LayerNormGrad", std::move(ins), 3, a);
    if (g.needsGrad(0)) g.setGradIn(0, outs[0]);
    if (g.needsGrad(1)) g.setGradIn(1, g.reduceToShape(outs[1], g.inputInfo(1).shape()));
    if (op.hasInput(2) && g.needsGrad(2)) {
      g.setGradIn(2, g.reduceToShape(outs[2], g.inputInfo(2).shape()));
    }
  };
  return d;
}());

// LayerNormGrad (ai.xtrain): inputs dY, X, Scale, Mean?, InvStdDev?, dMean?, dInvStdDev?;
// attributes axis (non-negative) and epsilon. Mean and InvStdDev are the forward op's saved
// statistics (recomputed from X when absent); dMean/dInvStdDev are gradients arriving at those
// outputs. Outputs dX (X's info), dScale and dB, both of the full normalised shape X.shape[axis:]
// (the forward grad reduces them to Scale's/B's shape).
XT_REGISTER_OP(normGradDef("LayerNormGrad", [](const ShapeContext& ctx) {
  const TensorInfo& x = ctx.input(1);
  const int64_t axis = ctx.attrs().getInt("axis");
  if (axis < 0 || axis >= x.rank()) ctx.fail("axis {} out of range for X {}", axis, x.toString());
  Shape stat = x.shape();
  std::fill(stat.begin() + axis, stat.end(), 1);
  checkNormGradInputs(ctx, stat, "Mean", "InvStdDev");
  const TensorInfo norm(x.dataType(), normalizedShape(x.shape(), axis));
  return std::vector<TensorInfo>{x, norm, norm};
}));

// Training mode of a BatchNormalization: the training_mode attribute when present (canonicalize
// sets it for opset >= 14), else (opset < 14) whether the op has more than one output, as ONNX
// opset 9 defines it. canonicalize cannot apply the opset < 14 rule itself because it runs before
// the outputs are known, so the same rule is repeated in the kernel
// (device/kernels/batch_norm_kernels.cpp).
bool batchNormTraining(const Op& op) {
  if (op.attrs.has("training_mode")) return op.attrs.getInt("training_mode") != 0;
  int present = 0;
  for (size_t i = 0; i < op.outputs.size(); ++i) present += op.hasOutput(i) ? 1 : 0;
  return present > 1;
}

// The element type a BatchNormalization parameter or statistic may have for X of type `x`: X's, or
// FLOAT with a FLOAT16 X (FLOAT32 statistics for half activations, as PopART allows; the kernels
// compute in FLOAT either way).
bool batchNormParamType(DataType x, DataType t) {
  return t == x || (x == DataType::FLOAT16 && t == DataType::FLOAT);
}

// BatchNormalization's running_variance attribute (see the op below): absent means ONNX's
// "population"; any other value than the two is an error naming it.
std::string runningVarianceOf(const Op& op) {
  std::string v = op.attrs.getString("running_variance", "population");
  if (v != "population" && v != "unbiased") {
    throw error(
        "{}: running_variance is \"{}\"; expected \"population\" (ONNX's running variance) or "
        "\"unbiased\" (PyTorch's)",
        op.describe(), v);
  }
  return v;
}

// BatchNormalization (ai.onnx opsets 9-15; X is N x C x D1..Dk with k >= 0).
// Canonical form: inputs X, scale, B, input_mean, input_var (all but X [C] of X's type, or FLOAT
// with a FLOAT16 X; the statistics outputs take input_mean's and input_var's types); attributes
// epsilon (default 1e-5) and momentum (default 0.9) always set; training_mode (int) set for opset
// >= 14 (default 0) and, for opset < 14, derived from the outputs (see batchNormTraining). spatial
// must be 1 when present. Outputs: Y; in training mode optionally running_mean and running_var, and
// for opset < 14 also saved_mean and saved_var (the batch mean and the batch population variance).
// Following the opset 15 text,
//   running_mean = momentum * input_mean + (1 - momentum) * batch_mean
//   running_var  = momentum * input_var  + (1 - momentum) * batch_var
// where batch_var is the population variance (divides by N*D1*..*Dk, not N*D1*..*Dk - 1), the same
// variance that normalises Y. xtrain's own attribute running_variance (string, canonicalised to
// "population" when absent) chooses that estimator for running_var: "population" is ONNX's,
// "unbiased" is PyTorch's (batch_var * M / (M - 1), M = N*D1*..*Dk values per channel; Y is still
// normalised with the population variance, as in PyTorch). The ONNX import sets it
// (OnnxImportOptions::batchNormRunningVariance); no ONNX file carries it. "unbiased" needs M > 1 in
// training, as PyTorch does ("Expected more than 1 value per channel when training"): M = 1 is an
// error at shape inference. Inference mode normalises with input_mean/input_var and has only Y.
// Gradients flow to X, scale and B through BatchNormGrad (both modes; in training mode gradients
// arriving at running_mean/running_var/saved_* reach X through the batch statistics). input_mean
// and input_var get no gradient: they are statistics, not trainable.
XT_REGISTER_OP([] {
  OpDef d{.type = "BatchNormalization",
          .minInputs = 5,
          .maxInputs = 5,
          .minOutputs = 1,
          .maxOutputs = 5};
  d.canonicalize = [](Op& op, const Graph&) {
    op.attrs.set("epsilon", op.attrs.getFloat("epsilon", 1e-5f));
    op.attrs.set("momentum", op.attrs.getFloat("momentum", 0.9f));
    if (op.opset >= 14) {
      op.attrs.set("training_mode", op.attrs.getInt("training_mode", 0) != 0 ? int64_t{1} : 0);
    }
    if (op.attrs.getInt("spatial", 1) != 1) {
      throw error("{}: spatial={} is not supported (only per-channel statistics, spatial=1)",
                  op.describe(), op.attrs.getInt("spatial"));
    }
    op.attrs.erase("spatial");
    op.attrs.erase("is_test");
    op.attrs.set("running_variance", runningVarianceOf(op));
  };
  d.infer = [](const ShapeContext& ctx) {
    const Op& op = ctx.op();
    ctx.requireFloatOrHalf(0, "X");
    const TensorInfo& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("X is {}; expected rank >= 2 (N x C x D1 x ... x Dk)", x.toString());
    const int64_t c = x.dim(1);
    const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) {
      const TensorInfo& t = ctx.input(i);
      if (!batchNormParamType(x.dataType(), t.dataType()) || t.shape() != Shape{c}) {
        ctx.fail("{} is {}; expected {}[{}] (one value per channel of X {})", names[i],
                 t.toString(), dataTypeName(x.dataType()), c, x.toString());
      }
    }
    const bool training = batchNormTraining(op);
    int present = 0;
    for (size_t i = 1; i < op.outputs.size(); ++i) present += op.hasOutput(i) ? 1 : 0;
    if (!training && present > 0) {
      ctx.fail(
          "training_mode is 0 but the op has {} outputs besides Y; only Y is valid in "
          "inference mode",
          present);
    }
    if (op.opset >= 14 && (op.hasOutput(3) || op.hasOutput(4))) {
      ctx.fail(
          "has {} outputs; from opset 14 the outputs are Y, running_mean, running_var "
          "(saved_mean/saved_var were removed)",
          op.outputs.size());
    }
    if (training && x.nelms() == 0) {
      ctx.fail("training mode needs a non-empty batch to compute statistics, X is {}",
               x.toString());
    }
    if (training && c > 0 && x.nelms() / c == 1 && runningVarianceOf(op) == "unbiased") {
      ctx.fail(
          "X is {}: one value per channel, whose unbiased variance (running_variance = "
          "\"unbiased\", PyTorch's convention) is undefined; PyTorch refuses such a batch in "
          "training too (\"Expected more than 1 value per channel when training\"). Give each "
          "channel more than one value (a larger batch), or use ONNX's population variance",
          x.toString());
    }
    // The statistics have the types of the inputs they update (PopART's rule): input_mean's for
    // the means, input_var's for the variances.
    const TensorInfo mean = ctx.input(3), var = ctx.input(4);
    return std::vector<TensorInfo>{x, mean, var, mean, var};
  };
  d.grad = [](GradContext& g) {
    const Op& op = g.op();
    const bool training = batchNormTraining(op);
    Attributes a;
    a.set("epsilon", g.attrs().getFloat("epsilon"));
    a.set("momentum", g.attrs().getFloat("momentum"));
    a.set("training_mode", int64_t{training ? 1 : 0});
    a.set("running_variance", runningVarianceOf(op));
    std::vector<TensorId> ins = {g.gradOutOrZeros(0), g.input(0), g.input(1)};
    if (training) {
      ins.insert(ins.end(), {TensorId(), TensorId()});
      for (size_t i = 1; i < 5; ++i) ins.push_back(op.hasOutput(i) ? g.gradOut(i) : TensorId());
    } else {
      ins.insert(ins.end(), {g.input(3), g.input(4)});
    }
    auto outs = g.emitMulti("BatchNormGrad", std::move(ins), 3, a);
    for (size_t i = 0; i < 3; ++i) {
      if (g.needsGrad(i)) g.setGradIn(i, outs[i]);
    }
  };
  return d;
}());

// BatchNormGrad (ai.xtrain): inputs dY, X, scale, mean?, var?, dRunningMean?, dRunningVar?,
// dSavedMean?, dSavedVar?; attributes epsilon, momentum, training_mode, running_variance (the
// forward's: with "unbiased", dRunningVar reaches the batch variance times M / (M - 1)). In
// training mode the batch
// statistics are recomputed from X and mean/var are absent; in inference mode mean/var are the
// forward's input_mean and input_var. Outputs dX (X's info), dScale [C], dB [C] (scale's type).
// With a FLOAT16 X the others may be FLOAT (see batchNormParamType).
XT_REGISTER_OP([] {
  OpDef d{.type = "BatchNormGrad",
          .domain = kXtrainDomain,
          .minInputs = 3,
          .maxInputs = 9,
          .minOutputs = 3,
          .maxOutputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(1);
    if (x.rank() < 2 || ctx.input(0) != x) {
      ctx.fail("dY {} and X {} must be equal and of rank >= 2", ctx.input(0).toString(),
               x.toString());
    }
    const TensorInfo stat(x.dataType(), {x.dim(1)});
    for (size_t i = 2; i < 9; ++i) {
      if (ctx.hasInput(i) && (ctx.input(i).shape() != stat.shape() ||
                              !batchNormParamType(x.dataType(), ctx.input(i).dataType()))) {
        ctx.fail("input {} is {}; expected {}", i, ctx.input(i).toString(), stat.toString());
      }
    }
    const bool training = ctx.attrs().getInt("training_mode") != 0;
    if (!training && !(ctx.hasInput(3) && ctx.hasInput(4))) {
      ctx.fail("inference mode needs the mean and var inputs");
    }
    const TensorInfo param(ctx.input(2).dataType(), stat.shape());  // dScale, dB: scale's type
    return std::vector<TensorInfo>{x, param, param};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
