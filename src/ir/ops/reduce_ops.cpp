// Reductions over a set of axes: ReduceSum and ReduceMean (gradients broadcast the output gradient
// back to the input's shape, ReduceMean's scaled by 1/N), and ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare, whose gradients go through
// one ai.xtrain
// ReduceGrad op (attribute `mode`) that reads the forward input and output.
#include <algorithm>
#include <set>

#include "ir/op_registry.hpp"
#include "ir/ops/const_input.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {
namespace {

// Canonical form of ReduceSum and ReduceMean: attribute `axes` lists the reduced axes explicitly,
// sorted, non-negative and unique (an empty list means no reduction: the op copies its input), and
// `keepdims` is 0 or 1. Canonicalize resolves ONNX's forms: axes as attribute (opset 11/12
// ReduceSum, ReduceMean up to 17) or input (ReduceSum 13+, ReduceMean 18+); absent or empty axes
// reduce everything unless noop_with_empty_axes=1 (opset 13+ ReduceSum), which is then dropped.
void canonicalizeReduce(Op& op, const Graph& graph) {
  constInputToAttr(op, graph, 1, "axes");
  if (!op.hasInput(0)) return;  // addOp reports the missing input
  const int64_t rank = graph.tensor(op.inputs[0]).info.rank();
  std::vector<int64_t> given = op.attrs.getInts("axes", {});
  const bool noop = op.attrs.getInt("noop_with_empty_axes", 0) != 0;
  op.attrs.erase("noop_with_empty_axes");
  std::vector<int64_t> axes;
  if (given.empty()) {
    if (!noop) {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    }
  } else {
    std::set<int64_t> unique;
    for (int64_t axis : given) {
      const int64_t a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank) {
        throw popart_worded_error(
            popartAxisOutOfRange(axis, rank),
            xtrain::format("{}: axis {} is out of range for the input {}: {}", op.describe(), axis,
                           graph.tensor(op.inputs[0]).info.toString(),
                           popartAxisOutOfRange(axis, rank)));
      }
      if (!unique.insert(a).second) {
        throw error("{}: axis {} is repeated in axes {}", op.describe(), axis, given);
      }
    }
    axes.assign(unique.begin(), unique.end());
  }
  op.attrs.set("axes", std::move(axes));
  op.attrs.set("keepdims", int64_t{op.attrs.getInt("keepdims", 1) != 0 ? 1 : 0});
}

std::vector<TensorInfo> inferReduce(const ShapeContext& ctx) {
  const TensorInfo& in = ctx.input(0);
  const std::vector<int64_t>& axes = ctx.attrs().getInts("axes");
  const bool keep = ctx.attrs().getInt("keepdims") != 0;
  std::vector<bool> reduced(in.shape().size(), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= in.rank())
      ctx.fail("axis {} is out of range for the input {}", a, in.toString());
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape out;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in.shape()[i]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  return {TensorInfo(in.dataType(), out)};
}

// Broadcasts the output gradient back to the input's shape, scaled by `scale` (1 for sums).
void reduceGrad(GradContext& g, bool mean) {
  if (!g.needsGrad(0)) return;
  const Shape& inShape = g.inputInfo(0).shape();
  Shape kept = inShape;
  int64_t n = 1;
  for (int64_t a : g.attrs().getInts("axes")) {
    n *= inShape[static_cast<size_t>(a)];
    kept[static_cast<size_t>(a)] = 1;
  }
  TensorId gy = g.gradOut(0);
  if (mean && n != 1) {
    // Scale before broadcasting: the output is the smaller tensor. An empty input gets a zero
    // gradient.
    const float scale = n == 0 ? 0.0f : 1.0f / static_cast<float>(n);
    gy = g.emit("Mul", {gy, g.scalar(scale, g.outputInfo(0).dataType())}, {}, kOnnxDomain);
  }
  if (g.graph().tensor(gy).info.shape() != kept) {
    // keepdims=0 dropped the reduced axes: put them back as 1s so that numpy broadcasting lines up.
    Attributes r;
    r.set("shape", kept);
    r.set("allowzero", int64_t{1});
    gy = g.emit("Reshape", {gy}, std::move(r), kOnnxDomain);
  }
  if (kept != inShape) {
    Attributes b;
    b.set("shape", inShape);
    gy = g.emit("BroadcastToShape", {gy}, std::move(b));
  }
  g.setGradIn(0, gy);
}

OpDef reduceOp(const std::string& type, bool mean) {
  OpDef d{.type = type, .minInputs = 1, .maxInputs = 2};
  d.canonicalize = canonicalizeReduce;
  d.infer = inferReduce;
  d.grad = [mean](GradContext& g) { reduceGrad(g, mean); };
  return d;
}

XT_REGISTER_OP(reduceOp("ReduceSum", false));
XT_REGISTER_OP(reduceOp("ReduceMean", true));

// ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
// ReduceSumSquare (ai.onnx).
// ONNX gives their axes as an attribute up to opset 17 (an input from 18, with
// noop_with_empty_axes); the canonical form is ReduceSum's (see canonicalizeReduce), which accepts
// every form. Types: FLOAT and FLOAT16; ReduceMax and ReduceMin also INT32 and INT64 (not
// differentiable). Over an empty set the results are those of ONNX opset 18: Max -inf (the lowest
// integer), Min +inf (the highest), Prod 1, L1/L2/SumSquare 0, LogSum and LogSumExp -inf. Gradients
// (ReduceGrad, x the input, y the output, g the output gradient, broadcast back):
//   Max/Min    g at the first (row-major) position of the extreme value of each reduced set, 0
//              elsewhere;
//   Prod       g * product of the other elements, computed without dividing (exact with zeros);
//   L1         g * sign(x) (0 at 0);  L2  g * x / y (0 where y = 0);  SumSquare  2 g x;
//   LogSumExp  g * exp(x - y) (0 where y = -inf);  LogSum  g * exp(-y) = g / sum(x).
OpDef reduceGradOp(const std::string& type, const std::string& mode, bool integers) {
  OpDef d{.type = type, .minInputs = 1, .maxInputs = 2};
  d.canonicalize = canonicalizeReduce;
  d.infer = [integers](const ShapeContext& ctx) {
    const DataType t = ctx.input(0).dataType();
    const bool isFloat = t == DataType::FLOAT || t == DataType::FLOAT16;
    const bool isInt =
        t == DataType::INT32 || t == DataType::INT64 || t == DataType::INT8 || t == DataType::UINT8;
    if (!isFloat && !(integers && isInt)) {
      ctx.fail("input 0 (data) is {}; expected {}", ctx.input(0).toString(),
               integers ? "FLOAT, FLOAT16, INT32, INT64, INT8 or UINT8" : "FLOAT or FLOAT16");
    }
    return inferReduce(ctx);
  };
  d.grad = [mode](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    a.set("axes", g.attrs().getInts("axes"));
    a.set("mode", mode);
    g.setGradIn(0, g.emit("ReduceGrad", {g.gradOut(0), g.input(0), g.output(0)}, std::move(a)));
  };
  return d;
}

XT_REGISTER_OP(reduceGradOp("ReduceMax", "max", true));
XT_REGISTER_OP(reduceGradOp("ReduceMin", "min", true));
XT_REGISTER_OP(reduceGradOp("ReduceProd", "prod", false));
XT_REGISTER_OP(reduceGradOp("ReduceL1", "l1", false));
XT_REGISTER_OP(reduceGradOp("ReduceL2", "l2", false));
XT_REGISTER_OP(reduceGradOp("ReduceLogSum", "logsum", false));
XT_REGISTER_OP(reduceGradOp("ReduceLogSumExp", "logsumexp", false));
XT_REGISTER_OP(reduceGradOp("ReduceSumSquare", "sumsquare", false));

// ReduceGrad (ai.xtrain): inputs gy (the forward output's gradient), x (the forward input), y (the
// forward output); attributes axes (sorted, non-negative, as the forward's canonical form) and mode
// (max, min, prod, l1, l2, logsum, logsumexp, sumsquare). Output dx (x's info).
XT_REGISTER_OP([] {
  OpDef d{.type = "ReduceGrad", .domain = kXtrainDomain, .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(1);
    Shape kept = x.shape();
    for (int64_t a : ctx.attrs().getInts("axes")) {
      if (a < 0 || a >= x.rank()) ctx.fail("axis {} is out of range for x {}", a, x.toString());
      kept[static_cast<size_t>(a)] = 1;
    }
    for (size_t i : {0, 2}) {
      if (ctx.input(i).nelms() != shapeNelms(kept) || ctx.input(i).dataType() != x.dataType()) {
        ctx.fail("input {} is {}; expected {} elements of {} (x {} reduced)", i,
                 ctx.input(i).toString(), shapeNelms(kept), dataTypeName(x.dataType()),
                 x.toString());
      }
    }
    const std::string& mode = ctx.attrs().getString("mode");
    static const std::set<std::string> kModes = {"max", "min",    "prod",      "l1",
                                                 "l2",  "logsum", "logsumexp", "sumsquare"};
    if (kModes.count(mode) == 0) ctx.fail("mode '{}' is not a reduction with a gradient", mode);
    return std::vector<TensorInfo>{x};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
