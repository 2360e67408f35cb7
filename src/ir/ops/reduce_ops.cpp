// Reductions over a set of axes: ReduceSum and ReduceMean. Their gradients broadcast the output
// gradient back to the input's shape (ReduceMean's scaled by 1/N).
#include <algorithm>
#include <set>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

// Moves a constant axes input into attribute `axes` (read exactly for INT32/INT64); either form is
// accepted at any opset, since internal ops carry opset 0 and always use the attribute.
void constInputToAttr(Op& op, const Graph& graph, size_t index, const std::string& name) {
  if (!op.hasInput(index)) return;
  if (op.attrs.has(name)) {
    throw error("{}: '{}' is given both as an attribute and as input {}; give one", op.describe(),
                name, index);
  }
  const Tensor& t = graph.tensor(op.inputs[index]);
  if (t.kind == TensorKind::Const && t.value &&
      (t.value->dataType() == DataType::INT64 || t.value->dataType() == DataType::INT32)) {
    std::vector<int64_t> values;
    for (int64_t i = 0; i < t.value->nelms(); ++i) {
      values.push_back(t.value->dataType() == DataType::INT64 ? t.value->data<int64_t>()[i]
                                                              : t.value->data<int32_t>()[i]);
    }
    op.attrs.set(name, std::move(values));
    op.inputs[index].clear();
    return;
  }
  moveConstInputToAttr(op, graph, index, name);  // reports a non-constant input
}

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
        throw error("{}: axis {} is out of range for the input {} (expected -{} to {})",
                    op.describe(), axis, graph.tensor(op.inputs[0]).info.toString(), rank,
                    rank - 1);
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
  OpDef d;
  d.type = type;
  d.minInputs = 1;
  d.maxInputs = 2;
  d.canonicalize = canonicalizeReduce;
  d.infer = inferReduce;
  d.grad = [mean](GradContext& g) { reduceGrad(g, mean); };
  return d;
}

XT_REGISTER_OP(reduceOp("ReduceSum", false));
XT_REGISTER_OP(reduceOp("ReduceMean", true));

}  // namespace
}  // namespace xtrain::ir
