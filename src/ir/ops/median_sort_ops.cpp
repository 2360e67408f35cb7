// PopART's ai.graphcore ReduceMedian, Sort and Bucketize, and ReduceMedian's gradient op
// ai.xtrain ReduceMedianGrad. Kernels: src/device/kernels/median_sort_kernels.cpp.
#include <set>

#include "ir/op_registry.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {
namespace {

bool isSortable(DataType t) {
  return t == DataType::FLOAT || t == DataType::FLOAT16 || t == DataType::INT32 ||
         t == DataType::INT64 || t == DataType::UINT32;
}

constexpr const char* kSortableTypes = "FLOAT, FLOAT16, INT32, INT64 or UINT32";

// The shape of a reduction over `axes` (sorted, non-negative), PopART's ReduceOp rule.
Shape reducedShape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// ReduceMedian (ai.graphcore opset 1): attributes axes (absent: every axis; an empty list: none, so
// the op copies its input and every index is 0) and keepdims (default 1). Outputs: the median of
// each reduced set, of the input's type, and its INT32 index: the element's position in the set
// flattened in row-major order over the reduced axes (ascending). Of an even count the lower of the
// two middle values is the median (PopART sorts the set and takes element (n - 1) / 2); among equal
// values the lowest index is taken, and NaN sorts above every number.
// Canonical form: `axes` explicit, sorted, non-negative, unique; keepdims 0 or 1.
// Gradient: the output gradient goes to the median element of each set, zero elsewhere
// (ReduceMedianGrad), as PopART scatters it along the forward indices.
void canonicalizeMedian(Op& op, const Graph& graph) {
  if (!op.hasInput(0)) return;  // addOp reports the missing input
  const TensorInfo& x = graph.tensor(op.inputs[0]).info;
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  if (!op.attrs.has("axes")) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  } else {
    const std::vector<int64_t> given = op.attrs.getInts("axes");
    std::set<int64_t> unique;
    for (int64_t axis : given) {
      const int64_t a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank) {
        throw popart_worded_error(
            popartAxisOutOfRange(axis, rank),
            xtrain::format("{}: axis {} is out of range for the input {}: {}", op.describe(), axis,
                           x.toString(), popartAxisOutOfRange(axis, rank)));
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

XT_REGISTER_OP([] {
  OpDef d{.type = "ReduceMedian",
          .domain = kGraphcoreDomain,
          .minInputs = 1,
          .maxInputs = 1,
          .minOutputs = 1,
          .maxOutputs = 2};
  d.canonicalize = canonicalizeMedian;
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    if (!isSortable(x.dataType())) {
      ctx.fail("input 0 (data) is {}; expected {}", x.toString(), kSortableTypes);
    }
    const std::vector<int64_t>& axes = ctx.attrs().getInts("axes");
    int64_t count = 1;
    for (int64_t a : axes) {
      if (a < 0 || a >= x.rank()) ctx.fail("axis {} is out of range for the input", a);
      count *= x.shape()[static_cast<size_t>(a)];
    }
    const Shape out = reducedShape(x.shape(), axes, ctx.attrs().getInt("keepdims") != 0);
    if (count == 0 && shapeNelms(out) != 0) {
      ctx.fail("axes {} of the input {} hold no elements; an empty set has no median", axes,
               x.toString());
    }
    return std::vector<TensorInfo>{TensorInfo(x.dataType(), out), TensorInfo(DataType::INT32, out)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Graph& graph = g.graph();
    Op& fwd = graph.op(g.op().id);
    if (!fwd.hasOutput(1)) {
      // The indices the forward pass found: give the op its optional second output.
      const TensorId id = graph.uniqueId(fwd.outputs[0] + "_indices");
      Tensor& t = graph.addTensor(id, TensorInfo(DataType::INT32, g.outputInfo(0).shape()),
                                  TensorKind::Activation);
      t.producer = fwd.id;
      fwd.outputs.resize(2);
      fwd.outputs[1] = id;
    }
    Attributes a;
    a.set("axes", g.attrs().getInts("axes"));
    a.set("shape", g.inputInfo(0).shape());
    g.setGradIn(0, g.emit("ReduceMedianGrad", {g.gradOutOrZeros(0), fwd.outputs[1]}, a));
  };
  return d;
}());

// ReduceMedianGrad(gy, indices) (ai.xtrain) with attributes axes (sorted, non-negative) and shape
// (the forward input's): zeros of `shape` with gy[o] at the median element of reduced set o.
XT_REGISTER_OP([] {
  OpDef d{.type = "ReduceMedianGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    if (gy.dataType() != DataType::INT32) ctx.requireFloatOrHalf(0, "gy");
    const Shape& shape = ctx.attrs().getInts("shape");
    Shape kept = shape;
    for (int64_t a : ctx.attrs().getInts("axes")) {
      if (a < 0 || a >= static_cast<int64_t>(shape.size())) {
        ctx.fail("axis {} is out of range for the shape {}", a, shapeToString(shape));
      }
      kept[static_cast<size_t>(a)] = 1;
    }
    if (indices.dataType() != DataType::INT32 || indices.nelms() != shapeNelms(kept) ||
        gy.nelms() != shapeNelms(kept)) {
      ctx.fail("gy {} and indices {} must hold {} elements (indices INT32)", gy.toString(),
               indices.toString(), shapeNelms(kept));
    }
    return std::vector<TensorInfo>{TensorInfo(gy.dataType(), shape)};
  };
  return d;
}());

// Sort (ai.graphcore opset 1): X sorted along `axis` (default -1), ascending unless descending = 1.
// Outputs: the values and their INT32 indices along the axis (PopART's TopK with k the axis'
// length). Equal values keep their order (so `stable` = 1, PopART's guarantee, always holds; with
// stable = 0 PopART leaves their order open); NaN sorts above every number. Gradient: the output
// gradient scattered back to where each value came from (GatherElementsGrad).
XT_REGISTER_OP([] {
  OpDef d{.type = "Sort",
          .domain = kGraphcoreDomain,
          .minInputs = 1,
          .maxInputs = 1,
          .minOutputs = 2,
          .maxOutputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    if (!isSortable(x.dataType())) {
      ctx.fail("input 0 (X) is {}; expected {}", x.toString(), kSortableTypes);
    }
    if (x.rank() == 0) ctx.fail("input 0 (X) {} is a scalar; it needs rank >= 1", x.toString());
    normalizeAxis(ctx, ctx.attrs().getInt("axis", -1), x.rank());
    for (const char* flag : {"descending", "stable"}) {
      const int64_t v = ctx.attrs().getInt(flag, 0);
      if (v != 0 && v != 1) ctx.fail("{} is {}; expected 0 or 1", flag, v);
    }
    return std::vector<TensorInfo>{x, TensorInfo(DataType::INT32, x.shape())};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const TensorInfo& x = g.inputInfo(0);
    int64_t axis = g.attrs().getInt("axis", -1);
    if (axis < 0) axis += x.rank();
    Attributes a;
    a.set("axis", axis);
    a.set("shape", x.shape());
    g.setGradIn(0, g.emit("GatherElementsGrad", {g.gradOutOrZeros(0), g.output(1)}, a));
  };
  return d;
}());

// Bucketize(input, boundaries) (ai.graphcore opset 1) with attribute right (0 or 1, default 0):
// for each element x the INT32 index of its bucket among the 1-D boundaries b (of input's type),
// as torch.bucketize: with sorted b, the i with b[i-1] < x <= b[i] (right = 0) or
// b[i-1] <= x < b[i] (right = 1), 0 below b[0] and len(b) above the last (and for NaN). With
// unsorted b the result is PopART's: the smallest i >= 1 whose interval holds x, else 0 when x is
// at or below (right: below) b[0], else len(b). No gradient (an index).
XT_REGISTER_OP([] {
  OpDef d{.type = "Bucketize", .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    const TensorInfo& b = ctx.input(1);
    const DataType t = x.dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::INT32 &&
        t != DataType::UINT32) {
      ctx.fail("input 0 (input) is {}; expected FLOAT, FLOAT16, INT32 or UINT32", x.toString());
    }
    if (b.rank() != 1) {
      ctx.fail("input 1 (boundaries) {} is not a 1-D tensor (its rank is {})", b.toString(),
               b.rank());
    }
    if (b.dataType() != t) {
      ctx.fail("the input {} and the boundaries {} have different data types", x.toString(),
               b.toString());
    }
    if (b.nelms() == 0) ctx.fail("the boundaries {} are empty", b.toString());
    const int64_t right = ctx.attrs().getInt("right", 0);
    if (right != 0 && right != 1) ctx.fail("right is {}; expected 0 or 1", right);
    return std::vector<TensorInfo>{TensorInfo(DataType::INT32, x.shape())};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
