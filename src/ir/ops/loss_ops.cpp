// Loss ops: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (ai.onnx opsets 12/13) and
// PopART's Nll, L1 and IdentityLoss (ai.graphcore), with their gradients SoftmaxCrossEntropyGrad,
// NegativeLogLikelihoodLossGrad, NllGrad and L1Grad (ai.xtrain).
//
// The ai.graphcore losses take PopART's ReductionType as the int attribute `reduction`:
// 0 = Sum, 1 = Mean, 2 = NoReduction (xtrain::ReductionType, include/xtrain/reductiontype.hpp); the
// default is Mean, as in PopART's builder. PopART's own ONNX files store it as a string ("Sum",
// "Mean", "None"); canonicalize turns such a string into the int.
#include <variant>

#include "ir/op_registry.hpp"
#include "ir/ops/graphcore_reduction.hpp"
#include "ir/ops/popart_wording.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::ir {
namespace {

ReductionType graphcoreReduction(const Attributes& a) {
  return static_cast<ReductionType>(a.getInt("reduction"));
}

// Nll's label types: PopART's integer types (UINT16 is left out: device buffers cannot tell it from
// FLOAT16 storage).
bool isLabelType(DataType t) {
  switch (t) {
    case DataType::INT8:
    case DataType::UINT8:
    case DataType::INT16:
    case DataType::INT32:
    case DataType::UINT32:
    case DataType::INT64:
    case DataType::UINT64: return true;
    default: return false;
  }
}

void copyAttrs(const Attributes& from, Attributes& to, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = from.all().find(n);
    if (it != from.all().end()) to.set(n, it->second);
  }
}

// Output infos of a loss over classes (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss): input 0
// FLOAT/FLOAT16 [N, C, D1..Dk], input 1 INT32/INT64 [N, D1..Dk], optional input 2 [C] of input 0's
// type; attribute reduction. Outputs loss ([] or, for "none", input 1's shape) and input 0's info
// (SoftmaxCrossEntropyLoss's log_prob). The names are the ONNX input names, for the messages.
std::vector<TensorInfo> classLossInfo(const ShapeContext& ctx, const char* scoresName,
                                      const char* labelsName, const char* weightsName) {
  const TensorInfo& scores = ctx.input(0);
  const TensorInfo& labels = ctx.input(1);
  if ((scores.dataType() != DataType::FLOAT && scores.dataType() != DataType::FLOAT16) ||
      scores.rank() < 2) {
    ctx.fail("{} is {}; expected FLOAT or FLOAT16 [N, C] or [N, C, D1, ..., Dk]", scoresName,
             scores.toString());
  }
  if (scores.dim(1) == 0) ctx.fail("{} {} has no classes", scoresName, scores.toString());
  if (labels.dataType() != DataType::INT32 && labels.dataType() != DataType::INT64) {
    ctx.fail("{} is {}; expected INT32 or INT64", labelsName, labels.toString());
  }
  Shape expected = scores.shape();
  expected.erase(expected.begin() + 1);
  if (labels.shape() != expected) {
    ctx.fail("{} {} do not match {} {}: expected {} of shape {} ({} without the class dimension 1)",
             labelsName, labels.toString(), scoresName, scores.toString(), labelsName,
             shapeToString(expected), scoresName);
  }
  if (ctx.hasInput(2)) {
    const TensorInfo& w = ctx.input(2);
    if (w.dataType() != scores.dataType() || w.shape() != Shape{scores.dim(1)}) {
      ctx.fail("{} is {}; expected {}[{}] (one per class of {} {})", weightsName, w.toString(),
               dataTypeName(scores.dataType()), scores.dim(1), scoresName, scores.toString());
    }
  }
  const bool none = ctx.attrs().getString("reduction") == "none";
  return std::vector<TensorInfo>{TensorInfo(scores.dataType(), none ? labels.shape() : Shape{}),
                                 scores};
}

void canonicalizeOnnxReduction(Op& op) {
  const std::string r = op.attrs.getString("reduction", "mean");
  if (r != "mean" && r != "sum" && r != "none") {
    throw error("{}: reduction '{}' is not one of mean, sum, none", op.describe(), r);
  }
  op.attrs.set("reduction", r);
}

// SoftmaxCrossEntropyLoss (ai.onnx opsets 12, 13).
// Canonical form: inputs scores (FLOAT [N, C, D1..Dk], k >= 0), labels (INT32/INT64 [N, D1..Dk]),
// weights (optional FLOAT [C]); attributes reduction (string "mean", "sum" or "none", always set,
// default "mean") and ignore_index (int, only when given). Outputs loss (FLOAT [] or, for "none",
// the labels' shape) and log_prob (optional, scores' info). "mean" divides by the sum of the
// weights of the non-ignored labels (their count without weights); when that sum is 0 (every label
// ignored) the loss and its gradient are 0 rather than ONNX's NaN, so that an all-padding
// micro-batch does not poison training. A label outside [0, C) that is not ignore_index is a
// runtime error naming the op and the label. Gradient: scores only (softmax - onehot, weighted,
// scaled by the reduction; plus log_prob's gradient), through SoftmaxCrossEntropyGrad. weights get
// no gradient.
XT_REGISTER_OP([] {
  OpDef d{.type = "SoftmaxCrossEntropyLoss",
          .minInputs = 2,
          .maxInputs = 3,
          .minOutputs = 1,
          .maxOutputs = 2};
  d.canonicalize = [](Op& op, const Graph&) { canonicalizeOnnxReduction(op); };
  d.infer = [](const ShapeContext& ctx) {
    return classLossInfo(ctx, "scores", "labels", "weights");
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const Op& op = g.op();
    Attributes a;
    copyAttrs(g.attrs(), a, {"reduction", "ignore_index"});
    const bool hasLogProb = op.hasOutput(1);
    const TensorId dLogProb = hasLogProb ? g.gradOut(1) : TensorId();
    g.setGradIn(0, g.emit("SoftmaxCrossEntropyGrad",
                          {g.gradOutOrZeros(0), g.input(0), g.input(1),
                           op.hasInput(2) ? g.input(2) : TensorId(), dLogProb,
                           hasLogProb ? g.output(1) : TensorId()},
                          a));
  };
  return d;
}());

// SoftmaxCrossEntropyGrad (ai.xtrain): inputs dLoss (the loss's info), scores, labels, weights?,
// dLogProb?, logProb? (the forward's log_prob, saves recomputing the softmax); attributes as the
// forward. Output dScores (scores' info).
XT_REGISTER_OP([] {
  OpDef d{
      .type = "SoftmaxCrossEntropyGrad", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = 6};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& scores = ctx.input(1);
    for (size_t i : {4, 5}) {
      if (ctx.hasInput(i) && ctx.input(i) != scores) {
        ctx.fail("input {} is {}; expected {}", i, ctx.input(i).toString(), scores.toString());
      }
    }
    return std::vector<TensorInfo>{scores};
  };
  return d;
}());

// NegativeLogLikelihoodLoss (ai.onnx opsets 12, 13; the same definition at both, 13 adds BFLOAT16).
// Canonical form: inputs input (FLOAT [N, C, D1..Dk], k >= 0: log-probabilities), target
// (INT32/INT64 [N, D1..Dk]), weight (optional FLOAT [C]); attributes reduction ("mean", "sum" or
// "none", always set, default "mean") and ignore_index (int, only when given). Output loss (FLOAT
// [] or, for "none", the target's shape): loss[n, d] = -weight[t] * input[n, t, d] with t =
// target[n, d], 0 where t is ignore_index. "mean" divides the sum by the sum of weight[t] over the
// non-ignored targets (their count without weight); when that is 0 (every target ignored) the loss
// and its gradient are 0 rather than ONNX's NaN, as for SoftmaxCrossEntropyLoss. A target outside
// [0, C) that is not ignore_index is a runtime error naming the op. Gradient: input only, through
// NegativeLogLikelihoodLossGrad; weight gets none.
XT_REGISTER_OP([] {
  OpDef d{.type = "NegativeLogLikelihoodLoss", .minInputs = 2, .maxInputs = 3};
  d.canonicalize = [](Op& op, const Graph&) { canonicalizeOnnxReduction(op); };
  d.infer = [](const ShapeContext& ctx) {
    auto infos = classLossInfo(ctx, "input", "target", "weight");
    infos.resize(1);
    return infos;
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    copyAttrs(g.attrs(), a, {"reduction", "ignore_index"});
    g.setGradIn(0, g.emit("NegativeLogLikelihoodLossGrad",
                          {g.gradOut(0), g.input(0), g.input(1),
                           g.op().hasInput(2) ? g.input(2) : TensorId()},
                          a));
  };
  return d;
}());

// NegativeLogLikelihoodLossGrad (ai.xtrain): inputs dLoss (the loss's info), input, target,
// weight?; attributes as the forward. Output dInput (input's info): -weight[t] * coef at each
// non-ignored target, 0 elsewhere, coef = dLoss (per element for "none", divided by the weight sum
// for "mean").
XT_REGISTER_OP([] {
  OpDef d{.type = "NegativeLogLikelihoodLossGrad",
          .domain = kXtrainDomain,
          .minInputs = 3,
          .maxInputs = 4};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(1)}; };
  return d;
}());

// Nll (ai.graphcore; PopART's builder.aiGraphcore.nllloss).
// Canonical form: inputs probs (FLOAT [D1..Dn, C], classes in the LAST dimension as in PopART) and
// label (integer [D1..Dn]); attributes reduction (int, see the top of the file),
// inputIsLogProbability (int 0/1, always set, default 0) and ignoreIndex (int, only when given).
// Output: loss FLOAT [] or, for NoReduction, the label's shape. loss = -log(p[label]) (p clamped at
// 1e-7 as PopART does), or -p[label] when the input is a log-probability; ignored labels contribute
// 0; Mean divides by the number of non-ignored labels (0 when there are none). Gradient for probs
// through NllGrad.
XT_REGISTER_OP([] {
  OpDef d{.type = "Nll", .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph&) {
    canonicalizeGraphcoreReduction(op);
    op.attrs.set("inputIsLogProbability",
                 op.attrs.getInt("inputIsLogProbability", 0) != 0 ? int64_t{1} : 0);
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& probs = ctx.input(0);
    const TensorInfo& label = ctx.input(1);
    if ((probs.dataType() != DataType::FLOAT && probs.dataType() != DataType::FLOAT16) ||
        probs.rank() < 1) {
      ctx.fail("probs is {}; expected FLOAT or FLOAT16 [..., C] with the classes last",
               probs.toString());
    }
    if (probs.dim(-1) == 0) ctx.fail("probs {} has no classes", probs.toString());
    if (!isLabelType(label.dataType())) {
      ctx.fail("label is {}; expected an integer type (INT8..INT64, UINT8, UINT32, UINT64)",
               label.toString());
    }
    const Shape expected(probs.shape().begin(), probs.shape().end() - 1);
    if (label.shape() != expected) {
      const std::string popart = xtrain::format(
          "The label tensor ({}) must have shape {} to match all but the final dimension of the "
          "probabilities tensor ({}) in Op {}.",
          popartInfo(label), popartSequence(expected), popartInfo(probs), ctx.op().describe());
      throw popart_worded_error(
          popart,
          xtrain::format("{}: label {} does not match probs {}: expected label of shape {} (probs "
                         "without its last, class, dimension). {}",
                         ctx.op().describe(), label.toString(), probs.toString(),
                         shapeToString(expected), popart));
    }
    const bool none = graphcoreReduction(ctx.attrs()) == ReductionType::NoReduction;
    return std::vector<TensorInfo>{
        TensorInfo(ctx.input(0).dataType(), none ? label.shape() : Shape{})};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    copyAttrs(g.attrs(), a, {"reduction", "ignoreIndex", "inputIsLogProbability"});
    g.setGradIn(0, g.emit("NllGrad", {g.gradOut(0), g.input(0), g.input(1)}, a));
  };
  return d;
}());

// NllGrad (ai.xtrain): inputs dLoss, probs, label; attributes as Nll. Output dProbs: at each
// non-ignored label -dLoss/p (or -dLoss for log-probabilities), scaled by 1/count for Mean; 0
// elsewhere.
XT_REGISTER_OP([] {
  OpDef d{.type = "NllGrad", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(1)}; };
  return d;
}());

TensorInfo reducedInfo(const ShapeContext& ctx) {
  const bool none = graphcoreReduction(ctx.attrs()) == ReductionType::NoReduction;
  return TensorInfo(ctx.input(0).dataType(), none ? ctx.input(0).shape() : Shape{});
}

// L1 (ai.graphcore; PopART's builder.aiGraphcore.l1loss).
// Canonical form: input x (FLOAT, any shape); attributes lambda (float, required) and reduction
// (int, see the top of the file). Output: lambda * sum|x| (Sum), lambda * mean|x| (Mean, 0 for an
// empty x), or lambda * |x| elementwise (NoReduction). Gradient lambda * sign(x) (0 at x = 0)
// through L1Grad.
XT_REGISTER_OP([] {
  OpDef d{.type = "L1", .domain = kGraphcoreDomain};
  d.canonicalize = [](Op& op, const Graph&) {
    canonicalizeGraphcoreReduction(op);
    op.attrs.set("lambda", op.attrs.getFloat("lambda"));
  };
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0);
    return std::vector<TensorInfo>{reducedInfo(ctx)};
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    copyAttrs(g.attrs(), a, {"reduction", "lambda"});
    g.setGradIn(0, g.emit("L1Grad", {g.gradOut(0), g.input(0)}, a));
  };
  return d;
}());

// L1Grad (ai.xtrain): inputs dLoss, x; attributes lambda, reduction. Output dx (x's info).
XT_REGISTER_OP([] {
  OpDef d{.type = "L1Grad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(1)}; };
  return d;
}());

// IdentityLoss (ai.graphcore; PopART's builder.aiGraphcore.identityloss).
// Canonical form: input x (FLOAT, FLOAT16, or INT32 as PopART allows, so an integer op such as
// ReduceMedian can be trained through); attribute reduction (int, see the top of the file). Output
// sum(x) (Sum), mean(x) (Mean, 0 for an empty x; integer division for INT32, as PopART divides)
// or x itself (NoReduction). The gradient is composed: the loss gradient broadcast to x's shape,
// times 1/nelms for Mean (divided by nelms for INT32).
XT_REGISTER_OP([] {
  OpDef d{.type = "IdentityLoss", .domain = kGraphcoreDomain};
  d.canonicalize = [](Op& op, const Graph&) { canonicalizeGraphcoreReduction(op); };
  d.infer = [](const ShapeContext& ctx) {
    const DataType t = ctx.input(0).dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::INT32) {
      ctx.fail("input 0 is {}; only FLOAT, FLOAT16 and INT32 are supported",
               ctx.input(0).toString());
    }
    return std::vector<TensorInfo>{reducedInfo(ctx)};
  };
  d.grad = [](GradContext& g) {
    const TensorInfo& x = g.inputInfo(0);
    const ReductionType r = graphcoreReduction(g.attrs());
    if (r == ReductionType::NoReduction) {
      g.setGradIn(0, g.gradOut(0));
      return;
    }
    TensorId gy = g.gradOut(0);
    if (r == ReductionType::Mean && x.dataType() == DataType::INT32) {
      if (x.nelms() == 0) {
        gy = g.emit("Mul", {gy, g.scalar(0.0f, x.dataType())}, {}, kOnnxDomain);
      } else if (x.nelms() > 1) {
        gy = g.emit("Div", {gy, g.scalar(static_cast<float>(x.nelms()), x.dataType())}, {},
                    kOnnxDomain);
      }
    } else if (r == ReductionType::Mean) {
      const float inv = x.nelms() > 0 ? 1.0f / static_cast<float>(x.nelms()) : 0.0f;
      gy = g.emit("Mul", {gy, g.scalar(inv, x.dataType())}, {}, kOnnxDomain);
    }
    Attributes a;
    a.set("shape", x.shape());
    g.setGradIn(0, g.emit("BroadcastToShape", {gy}, a));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
