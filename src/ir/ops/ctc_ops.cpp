// Connectionist temporal classification: PopART's Ctc loss and CtcBeamSearchDecoder
// (ai.graphcore), and the loss's gradient CtcGrad (ai.xtrain). Kernels:
// src/device/kernels/ctc_kernels.cpp.
//
// Shapes, with T the maximum input length, N the batch size, C the number of classes (the blank
// included) and S the maximum target length: log-probabilities [T, N, C], targets [N, S], input
// and target lengths [N].
#include <string>
#include <variant>

#include "ir/op_registry.hpp"
#include "ir/ops/graphcore_reduction.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::ir {
namespace {

bool isIndexType(DataType t) {
  return t == DataType::UINT32 || t == DataType::INT32;
}

// The [N] lengths input i (named `name`) of a batch of n.
void checkLengths(const ShapeContext& ctx, size_t i, const char* name, int64_t n, bool int32Too) {
  const TensorInfo& info = ctx.input(i);
  const bool typeOk =
      info.dataType() == DataType::UINT32 || (int32Too && info.dataType() == DataType::INT32);
  if (!typeOk || info.shape() != Shape{n}) {
    ctx.fail("{} (input {}) is {}; expected UINT32{} [{}], one length per batch element", name, i,
             info.toString(), int32Too ? " or INT32" : "", n);
  }
}

// Input 0 of both ops: FLOAT or FLOAT16 [T, N, C] with C >= 1.
void checkLogProbs(const ShapeContext& ctx) {
  const TensorInfo& lp = ctx.input(0);
  if ((lp.dataType() != DataType::FLOAT && lp.dataType() != DataType::FLOAT16) || lp.rank() != 3 ||
      lp.dim(2) < 1) {
    ctx.fail("logProbs (input 0) is {}; expected FLOAT or FLOAT16 [T, N, C] (time, batch, classes)",
             lp.toString());
  }
}

DataType ctcOutputType(const ShapeContext& ctx) {
  const int64_t onnxType = ctx.attrs().getInt("outDataType", 0);
  if (onnxType == 0) return ctx.input(0).dataType();
  const DataType t = dataTypeFromOnnx(static_cast<int>(onnxType));
  if (t != DataType::FLOAT && t != DataType::FLOAT16) {
    ctx.fail("outDataType {} is not a floating point type; expected FLOAT, FLOAT16 or UNDEFINED",
             dataTypeName(t));
  }
  return t;
}

}  // namespace

// Ctc (ai.graphcore; PopART's builder.aiGraphcore.ctcloss).
// Canonical form: inputs logProbs (FLOAT/FLOAT16 [T, N, C], log-softmax over C), targets
// (UINT32/INT32 [N, S]), inputLengths and targetLengths (UINT32/INT32 [N]); attributes reduction
// (int ReductionType, default Mean; PopART's strings accepted), blank (int in [0, C), default 0),
// zeroInfinity (0/1, default 0) and outDataType (ONNX element type of the outputs, 0 = UNDEFINED:
// logProbs' type), all always set. Outputs: loss (FLOAT [] or, for NoReduction, [N]) and,
// optionally, the gradient of each batch element's own loss with respect to logProbs ([T, N, C],
// zero for t >= inputLengths[n]), which CtcGrad scales. loss[n] = -log p(targets[n] | logProbs[:,
// n]) summed over all alignments (the alpha recursion in log space); Mean divides each loss by
// max(targetLengths[n], 1) and averages over the batch, as torch.nn.CTCLoss. An impossible
// alignment (a target longer than its input allows) gives an infinite loss, or, with zeroInfinity,
// 0 and a zero gradient. Targets beyond their length are ignored; a target value outside [0, C) or
// equal to blank within the length, or a length beyond T or S, is a runtime error naming the op.
XT_REGISTER_OP([] {
  OpDef d{.type = "Ctc",
          .domain = kGraphcoreDomain,
          .minInputs = 4,
          .maxInputs = 4,
          .minOutputs = 1,
          .maxOutputs = 2};
  d.canonicalize = [](Op& op, const Graph&) {
    canonicalizeGraphcoreReduction(op);
    const int64_t blank = op.attrs.getInt("blank", 0);
    if (blank < 0) throw error("{}: blank {} is negative", op.describe(), blank);
    op.attrs.set("blank", blank);
    op.attrs.set("zeroInfinity", op.attrs.getInt("zeroInfinity", 0) != 0 ? int64_t{1} : 0);
    op.attrs.set("outDataType", op.attrs.getInt("outDataType", 0));
  };
  d.infer = [](const ShapeContext& ctx) {
    checkLogProbs(ctx);
    const int64_t n = ctx.input(0).dim(1), c = ctx.input(0).dim(2);
    const TensorInfo& targets = ctx.input(1);
    if (!isIndexType(targets.dataType()) || targets.rank() != 2 || targets.dim(0) != n) {
      ctx.fail(
          "targets (input 1) is {}; expected UINT32 or INT32 [N, S] with N = {} (dimension 1 "
          "of logProbs {})",
          targets.toString(), n, ctx.input(0).toString());
    }
    checkLengths(ctx, 2, "inputLengths", n, true);
    checkLengths(ctx, 3, "targetLengths", n, true);
    const int64_t blank = ctx.attrs().getInt("blank");
    if (blank >= c) {
      ctx.fail("blank {} is not a class of logProbs {} (expected 0 <= blank < {})", blank,
               ctx.input(0).toString(), c);
    }
    const DataType out = ctcOutputType(ctx);
    const bool none =
        ctx.attrs().getInt("reduction") == static_cast<int64_t>(ReductionType::NoReduction);
    return std::vector<TensorInfo>{TensorInfo(out, none ? Shape{n} : Shape{}),
                                   TensorInfo(out, ctx.input(0).shape())};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    if (!g.op().hasOutput(1)) {
      throw error("{}: the gradient needs the op's second output (the per-element gradient)",
                  g.op().describe());
    }
    Attributes a;
    a.set("reduction", g.attrs().getInt("reduction"));
    a.set("dataType", static_cast<int64_t>(g.inputInfo(0).dataType()));
    g.setGradIn(0, g.emit("CtcGrad", {g.output(1), g.input(3), g.gradOutOrZeros(0)}, a));
  };
  return d;
}());

// CtcGrad (ai.xtrain): inputs perElementGrad (Ctc's output 1, [T, N, C]), targetLengths ([N]) and
// dLoss (the loss's info); attributes reduction and dataType (the int of logProbs' DataType).
// Output dLogProbs [T, N, C] of that type: perElementGrad[t, n, c] times dLoss[n] (NoReduction),
// dLoss (Sum) or dLoss / (N max(targetLengths[n], 1)) (Mean).
XT_REGISTER_OP([] {
  OpDef d{.type = "CtcGrad", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const auto t = static_cast<DataType>(ctx.attrs().getInt("dataType"));
    return std::vector<TensorInfo>{TensorInfo(t, ctx.input(0).shape())};
  };
  return d;
}());

// CtcBeamSearchDecoder (ai.graphcore; PopART's builder.aiGraphcore.ctcbeamsearchdecoder).
// Inference only. Canonical form: inputs logProbs (FLOAT/FLOAT16 [T, N, C]) and dataLengths
// (UINT32 [N]); attributes blank (in [0, C), default 0), beam_width (>= 1, default 100) and
// top_paths (in [1, beam_width], default 1), always set. Outputs: labelProbs (logProbs' type [N,
// top_paths]: the log-probability of each decoded label sequence, best first), labelLengths
// (UINT32 [N, top_paths]) and decodedLabels (UINT32 [N, top_paths, T]; entries beyond the length
// are 0). Prefix beam search: at every time step each kept prefix is extended by every class (a
// blank or a repeat of the last label keeps the prefix), the probabilities of ending in a blank
// and in a label are tracked apart, and the beam_width most probable prefixes are kept.
XT_REGISTER_OP([] {
  OpDef d{.type = "CtcBeamSearchDecoder",
          .domain = kGraphcoreDomain,
          .minInputs = 2,
          .maxInputs = 2,
          .minOutputs = 3,
          .maxOutputs = 3};
  d.canonicalize = [](Op& op, const Graph&) {
    const int64_t blank = op.attrs.getInt("blank", 0);
    const int64_t width = op.attrs.getInt("beam_width", 100);
    const int64_t top = op.attrs.getInt("top_paths", 1);
    if (blank < 0 || width < 1 || top < 1 || top > width) {
      throw error(
          "{}: blank {}, beam_width {} and top_paths {}: expected blank >= 0, beam_width >= 1 and "
          "1 <= top_paths <= beam_width",
          op.describe(), blank, width, top);
    }
    op.attrs.set("blank", blank);
    op.attrs.set("beam_width", width);
    op.attrs.set("top_paths", top);
  };
  d.infer = [](const ShapeContext& ctx) {
    checkLogProbs(ctx);
    const TensorInfo& lp = ctx.input(0);
    const int64_t n = lp.dim(1);
    checkLengths(ctx, 1, "dataLengths", n, false);
    const int64_t blank = ctx.attrs().getInt("blank");
    if (blank >= lp.dim(2)) {
      ctx.fail("blank {} is not a class of logProbs {} (expected 0 <= blank < {})", blank,
               lp.toString(), lp.dim(2));
    }
    const int64_t top = ctx.attrs().getInt("top_paths");
    return std::vector<TensorInfo>{TensorInfo(lp.dataType(), {n, top}),
                                   TensorInfo(DataType::UINT32, {n, top}),
                                   TensorInfo(DataType::UINT32, {n, top, lp.dim(0)})};
  };
  return d;
}());

}  // namespace xtrain::ir
