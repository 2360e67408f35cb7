// Data movement ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice and
// Expand, plus the internal SliceGrad used by Slice's gradient. Their kernels copy bytes, so any
// element type works.
#include <algorithm>
#include <array>
#include <numeric>

#include "ir/op_registry.hpp"
#include "ir/ops/const_input.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {
namespace {

// Gradient of every op whose output is its input with another shape.
void reshapeGrad(GradContext& g) {
  if (g.needsGrad(0)) g.setGradIn(0, g.reshapeTo(g.gradOut(0), g.inputInfo(0).shape()));
}

// The data type must have a byte size for the copying kernels (not STRING or UNDEFINED).
void checkCopyable(const ShapeContext& ctx, const TensorInfo& info) {
  if (dataTypeSize(info.dataType()) == 0) {
    ctx.fail("input {} has an element type that cannot be copied", info.toString());
  }
}

// Reshape(data[, shape]). Canonical form: attribute `shape` (the ONNX values as given: 0 copies the
// input's dimension unless allowzero=1, one -1 is inferred) and optional attribute `allowzero`
// (default 0).
XT_REGISTER_OP([] {
  OpDef d{.type = "Reshape", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    requiredConstInputToAttr(op, graph, 1, "shape", "the target shape");
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const std::vector<int64_t>& req = ctx.attrs().getInts("shape");
    const bool allowZero = ctx.attrs().getInt("allowzero", 0) != 0;
    Shape out;
    int inferred = -1;
    bool hasZero = false;
    for (size_t i = 0; i < req.size(); ++i) {
      const int64_t v = req[i];
      if (v == -1) {
        if (inferred >= 0) {
          ctx.fail(
              "shape {} has more than one -1 (shape input to ReshapeOp can only use -1 to "
              "specify one unknown dimension)",
              shapeToString(req));
        }
        inferred = static_cast<int>(i);
        out.push_back(1);
      } else if (v == 0 && !allowZero) {
        if (static_cast<int64_t>(i) >= in.rank()) {
          ctx.fail("shape {} copies dimension {} (a 0) but the input {} has rank {}",
                   shapeToString(req), i, in.toString(), in.rank());
        }
        out.push_back(in.shape()[i]);
      } else if (v < 0) {
        ctx.fail("shape {} has the invalid dimension {}", shapeToString(req), v);
      } else {
        hasZero = hasZero || v == 0;
        out.push_back(v);
      }
    }
    if (inferred >= 0) {
      if (hasZero) ctx.fail("shape {} has both -1 and 0 with allowzero=1", shapeToString(req));
      const int64_t known = shapeNelms(out);
      if (known == 0 || in.nelms() % known != 0) {
        ctx.fail("cannot reshape the input {} ({} elements) to shape {}: the -1 cannot be inferred",
                 in.toString(), in.nelms(), shapeToString(req));
      }
      out[static_cast<size_t>(inferred)] = in.nelms() / known;
    }
    if (shapeNelms(out) != in.nelms()) {
      ctx.fail(
          "cannot reshape the input {} ({} elements) to shape {} (resolved to {}, {} elements)",
          in.toString(), in.nelms(), shapeToString(req), shapeToString(out), shapeNelms(out));
    }
    checkCopyable(ctx, in);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), out)};
  };
  d.grad = reshapeGrad;
  return d;
}());

// Flatten(x) with attribute axis (default 1, in [-rank, rank]): [prod(dims before axis), prod(the
// rest)].
XT_REGISTER_OP([] {
  OpDef d{.type = "Flatten"};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const int64_t axis = ctx.attrs().getInt("axis", 1);
    const int64_t a = axis < 0 ? axis + in.rank() : axis;
    if (a < 0 || a > in.rank()) {
      ctx.fail("axis {} is out of range for the input {} (expected -{} to {})", axis, in.toString(),
               in.rank(), in.rank());
    }
    const auto mid = in.shape().begin() + a;
    const int64_t outer = shapeNelms(Shape(in.shape().begin(), mid));
    const int64_t inner = shapeNelms(Shape(mid, in.shape().end()));
    checkCopyable(ctx, in);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), {outer, inner})};
  };
  d.grad = reshapeGrad;
  return d;
}());

// Squeeze(data[, axes]). Canonical form: attribute `axes` (opset 11/12 attribute, 13+ input),
// negative axes allowed; absent: every dimension of size 1 is removed.
XT_REGISTER_OP([] {
  OpDef d{.type = "Squeeze", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) { constInputToAttr(op, graph, 1, "axes"); };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const Shape& s = in.shape();
    std::vector<bool> drop(s.size(), false);
    if (ctx.attrs().has("axes")) {
      for (int64_t axis : ctx.attrs().getInts("axes")) {
        const int64_t a = axis < 0 ? axis + in.rank() : axis;
        if (a < 0 || a >= in.rank()) {
          ctx.fail("axis {} is out of range for the input {}", axis, in.toString());
        }
        const auto u = static_cast<size_t>(a);
        if (drop[u]) ctx.fail("axis {} is repeated in axes {}", axis, ctx.attrs().getInts("axes"));
        if (s[u] != 1) {
          ctx.fail("cannot squeeze axis {} of the input {}: its size is {}, not 1", axis,
                   in.toString(), s[u]);
        }
        drop[u] = true;
      }
    } else {
      for (size_t i = 0; i < s.size(); ++i) drop[i] = s[i] == 1;
    }
    Shape out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (!drop[i]) out.push_back(s[i]);
    }
    checkCopyable(ctx, in);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), out)};
  };
  d.grad = reshapeGrad;
  return d;
}());

// Unsqueeze(data[, axes]). Canonical form: attribute `axes` (opset 11/12 attribute, 13+ input),
// required, positions in the output (rank + len(axes)); negative axes count from the output's end.
XT_REGISTER_OP([] {
  OpDef d{.type = "Unsqueeze", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    requiredConstInputToAttr(op, graph, 1, "axes", "the axes to insert");
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const std::vector<int64_t>& axes = ctx.attrs().getInts("axes");
    const int64_t outRank = in.rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(static_cast<size_t>(outRank), false);
    for (int64_t axis : axes) {
      const int64_t a = axis < 0 ? axis + outRank : axis;
      if (a < 0 || a >= outRank) {
        ctx.fail("axis {} is out of range for the output rank {} (input {}, axes {})", axis,
                 outRank, in.toString(), axes);
      }
      if (inserted[static_cast<size_t>(a)]) ctx.fail("axis {} is repeated in axes {}", axis, axes);
      inserted[static_cast<size_t>(a)] = true;
    }
    Shape out;
    size_t k = 0;
    for (size_t i = 0; i < inserted.size(); ++i) out.push_back(inserted[i] ? 1 : in.shape()[k++]);
    checkCopyable(ctx, in);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), out)};
  };
  d.grad = reshapeGrad;
  return d;
}());

// Transpose(x). Canonical form: attribute `perm` always present (canonicalize fills ONNX's default,
// the reversed dimensions).
XT_REGISTER_OP([] {
  OpDef d{.type = "Transpose"};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.attrs.has("perm") || !op.hasInput(0)) return;
    const int64_t rank = graph.tensor(op.inputs[0]).info.rank();
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
    op.attrs.set("perm", std::move(perm));
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const std::vector<int64_t>& perm = ctx.attrs().getInts("perm");
    if (static_cast<int64_t>(perm.size()) != in.rank()) {
      const std::string popart = xtrain::format(
          "Rank of permutation tensor {}, rank {} must be equal to rank of input tensor, shape {}, "
          "rank {}.",
          popartSequence(perm), perm.size(), popartSequence(in.shape()), in.rank());
      throw popart_worded_error(
          popart,
          xtrain::format("{}: perm {} has {} entries but the input {} has rank {} ({})",
                         ctx.op().describe(), perm, perm.size(), in.toString(), in.rank(), popart));
    }
    std::vector<bool> seen(perm.size(), false);
    Shape out;
    for (int64_t p : perm) {
      if (p < 0 || p >= in.rank() || seen[static_cast<size_t>(p)]) {
        ctx.fail("perm {} is not a permutation of 0..{}", perm, in.rank() - 1);
      }
      seen[static_cast<size_t>(p)] = true;
      out.push_back(in.shape()[static_cast<size_t>(p)]);
    }
    checkCopyable(ctx, in);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), out)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const std::vector<int64_t>& perm = g.attrs().getInts("perm");
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    Attributes a;
    a.set("perm", std::move(inverse));
    g.setGradIn(0, g.emit("Transpose", {g.gradOut(0)}, std::move(a), kOnnxDomain));
  };
  return d;
}());

// Concat(x0, x1, ...) with attribute axis (required, negative allowed).
XT_REGISTER_OP([] {
  OpDef d{.type = "Concat", .minInputs = 1, .maxInputs = -1};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& first = ctx.input(0);
    if (!ctx.attrs().has("axis")) ctx.fail("attribute 'axis' is required");
    if (first.rank() == 0)
      ctx.fail("input 0 is a scalar {}; scalars cannot be concatenated", first.toString());
    const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis"), first.rank());
    Shape out = first.shape();
    out[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const TensorInfo& in = ctx.input(i);
      bool ok = in.dataType() == first.dataType() && in.rank() == first.rank();
      for (int64_t k = 0; ok && k < in.rank(); ++k) {
        ok = k == axis ||
             in.shape()[static_cast<size_t>(k)] == first.shape()[static_cast<size_t>(k)];
      }
      if (!ok) {
        ctx.fail(
            "input {} is {} but input 0 is {}; all inputs need the same type and the same "
            "dimensions except along axis {}",
            i, in.toString(), first.toString(), axis);
      }
      out[static_cast<size_t>(axis)] += in.shape()[static_cast<size_t>(axis)];
    }
    checkCopyable(ctx, first);
    return std::vector<TensorInfo>{TensorInfo(first.dataType(), out)};
  };
  d.grad = [](GradContext& g) {
    const size_t n = g.op().inputs.size();
    const int64_t rank = g.inputInfo(0).rank();
    int64_t axis = g.attrs().getInt("axis");
    if (axis < 0) axis += rank;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < n; ++i)
      sizes.push_back(g.inputInfo(i).shape()[static_cast<size_t>(axis)]);
    Attributes a;
    a.set("axis", axis);
    a.set("split", sizes);
    std::vector<TensorId> parts =
        g.emitMulti("Split", {g.gradOut(0)}, static_cast<int>(n), std::move(a), kOnnxDomain);
    for (size_t i = 0; i < n; ++i) {
      if (g.needsGrad(i)) g.setGradIn(i, parts[i]);
    }
  };
  return d;
}());

// The sizes of Split's outputs along the axis: attribute `split`, or `dim` divided evenly.
std::vector<int64_t> splitSizes(const ShapeContext& ctx, int64_t dim, size_t numOutputs) {
  if (ctx.attrs().has("split")) {
    const std::vector<int64_t>& split = ctx.attrs().getInts("split");
    if (split.size() != numOutputs) {
      ctx.fail("split {} has {} entries but the op has {} outputs", split, split.size(),
               numOutputs);
    }
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0) ctx.fail("split {} has the negative size {}", split, s);
      sum += s;
    }
    if (sum != dim) ctx.fail("split {} sums to {} but the axis has size {}", split, sum, dim);
    return split;
  }
  if (dim % static_cast<int64_t>(numOutputs) != 0) {
    ctx.fail("the axis of size {} cannot be split evenly into {} outputs (give 'split')", dim,
             numOutputs);
  }
  return std::vector<int64_t>(numOutputs, dim / static_cast<int64_t>(numOutputs));
}

// Split(x[, split]) with attribute axis (default 0). Canonical form: attribute `split` (opset 11/12
// attribute, 13+ input); absent: equal parts, one per output.
XT_REGISTER_OP([] {
  OpDef d{.type = "Split", .minInputs = 1, .maxInputs = 2, .minOutputs = 1, .maxOutputs = -1};
  d.canonicalize = [](Op& op, const Graph& graph) { constInputToAttr(op, graph, 1, "split"); };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    if (in.rank() == 0) ctx.fail("the input {} is a scalar and cannot be split", in.toString());
    const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis", 0), in.rank());
    const std::vector<int64_t> sizes =
        splitSizes(ctx, in.shape()[static_cast<size_t>(axis)], ctx.op().outputs.size());
    std::vector<TensorInfo> outs;
    for (int64_t s : sizes) {
      Shape shape = in.shape();
      shape[static_cast<size_t>(axis)] = s;
      outs.emplace_back(in.dataType(), shape);
    }
    checkCopyable(ctx, in);
    return outs;
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const TensorInfo& in = g.inputInfo(0);
    int64_t axis = g.attrs().getInt("axis", 0);
    if (axis < 0) axis += in.rank();
    std::vector<TensorId> parts;
    for (size_t i = 0; i < g.op().outputs.size(); ++i) {
      if (g.op().hasOutput(i)) {
        parts.push_back(g.gradOutOrZeros(i));
        continue;
      }
      // An absent output has no tensor; its share of the gradient is zero.
      Shape shape = in.shape();
      const int64_t dim = shape[static_cast<size_t>(axis)];
      const auto n = static_cast<int64_t>(g.op().outputs.size());
      shape[static_cast<size_t>(axis)] =
          g.attrs().has("split") ? g.attrs().getInts("split")[i] : dim / n;
      parts.push_back(g.constant(HostTensor(TensorInfo(in.dataType(), shape)), "split_zero_grad"));
    }
    Attributes a;
    a.set("axis", axis);
    g.setGradIn(0, g.emit("Concat", parts, std::move(a), kOnnxDomain));
  };
  return d;
}());

// Per input dimension: first element, step and number of elements taken. ONNX Slice semantics as
// the operator spec states them (and onnxruntime implements): negative starts/ends count from the
// end, then starts clamp to [0, dim] and ends to [0, dim] for positive steps, starts to [0, dim-1]
// and ends to [-1, dim-1] for negative steps. (numpy differs only for a start below -dim with a
// negative step: it takes nothing where the spec takes element 0.)
struct SliceDim {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

std::vector<SliceDim> resolveSlice(const ShapeContext& ctx, const Shape& shape) {
  const Attributes& attrs = ctx.attrs();
  const std::vector<int64_t>& starts = attrs.getInts("starts");
  const std::vector<int64_t>& ends = attrs.getInts("ends");
  const std::vector<int64_t>& axes = attrs.getInts("axes");
  const std::vector<int64_t>& steps = attrs.getInts("steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    ctx.fail("starts {}, ends {}, axes {} and steps {} must have the same length", starts, ends,
             axes, steps);
  }
  const auto rank = static_cast<int64_t>(shape.size());
  std::vector<SliceDim> dims(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) dims[i] = {0, 1, shape[i]};
  std::vector<bool> seen(shape.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank)
      ctx.fail("axis {} is out of range for an input of shape {}", axes[i], shapeToString(shape));
    if (seen[static_cast<size_t>(a)]) ctx.fail("axis {} is repeated in axes {}", axes[i], axes);
    seen[static_cast<size_t>(a)] = true;
    const int64_t dim = shape[static_cast<size_t>(a)];
    const int64_t step = steps[i];
    if (step == 0) ctx.fail("step 0 for axis {}; steps must not be 0", axes[i]);
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t count = 0;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e - step - 1) / -step : 0;
    }
    dims[static_cast<size_t>(a)] = {count > 0 ? s : 0, step, count};
  }
  return dims;
}

Shape sliceShape(const std::vector<SliceDim>& dims) {
  Shape out;
  for (const auto& d : dims) out.push_back(d.count);
  return out;
}

// Emits Slice with the canonical attributes of `attrs` (used by SliceGrad's gradient).
Attributes sliceAttrs(const Attributes& attrs) {
  Attributes a;
  for (const char* name : {"starts", "ends", "axes", "steps"}) a.set(name, attrs.getInts(name));
  return a;
}

// Slice's starts, ends, axes and steps must be constants: PopART's programs compare its whole
// message (popart_worded_error), which names the op by its Slice version (1, 10, 11, 13).
void refuseNonConstantSliceInputs(const Op& op, const Graph& graph) {
  const std::array<const char*, 4> names{"starts", "ends", "axes", "steps"};
  for (size_t i = 1; i <= names.size(); ++i) {
    if (!op.hasInput(i)) continue;
    const Tensor& t = graph.tensor(op.inputs[i]);
    if (t.kind == TensorKind::Const && t.value) continue;
    const int64_t version = op.opset >= 13 ? 13 : op.opset >= 11 ? 11 : op.opset >= 10 ? 10 : 1;
    throw popart_worded_error(
        xtrain::format("Need the value of the {}.Slice:{} input '{}' to determine the output "
                       "shape, but was unable because [Tensor::getDataViaGraphTraversal] Could "
                       "not work out tensor data for {}.",
                       op.domain, version, names[i - 1], t.id),
        xtrain::format("{}: input {} ('{}', used as '{}') is not a constant; xtrain needs its "
                       "value to know the output shape, so it must be of type Constant",
                       op.describe(), i, t.id, names[i - 1]));
  }
}

// Slice(data, starts, ends[, axes, steps]) (opset 10+; opset 1-9 attributes). Canonical form:
// attributes `starts`, `ends`, `axes` and `steps`, all of the same length (canonicalize fills axes
// 0..n-1 and steps 1). Starts/ends may be negative or out of range (clamped; INT64_MAX / INT64_MIN
// mean "to the end"). PopART's ai.graphcore Slice is the attribute form (Slice-1) with one input.
OpDef sliceDef(const std::string& domain) {
  OpDef d{.type = "Slice",
          .domain = domain,
          .minInputs = 1,
          .maxInputs = domain == kOnnxDomain ? 5 : 1};
  d.canonicalize = [](Op& op, const Graph& graph) {
    refuseNonConstantSliceInputs(op, graph);
    constInputToAttr(op, graph, 1, "starts");
    constInputToAttr(op, graph, 2, "ends");
    constInputToAttr(op, graph, 3, "axes");
    constInputToAttr(op, graph, 4, "steps");
    if (!op.attrs.has("starts") || !op.attrs.has("ends")) {
      throw error("{}: needs starts and ends (inputs 1 and 2)", op.describe());
    }
    const size_t n = op.attrs.getInts("starts").size();
    if (!op.attrs.has("axes")) {
      std::vector<int64_t> axes(n);
      std::iota(axes.begin(), axes.end(), 0);
      op.attrs.set("axes", std::move(axes));
    }
    if (!op.attrs.has("steps")) op.attrs.set("steps", std::vector<int64_t>(n, 1));
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    checkCopyable(ctx, in);
    return std::vector<TensorInfo>{
        TensorInfo(in.dataType(), sliceShape(resolveSlice(ctx, in.shape())))};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a = sliceAttrs(g.attrs());
    a.set("shape", g.inputInfo(0).shape());
    g.setGradIn(0, g.emit("SliceGrad", {g.gradOut(0)}, std::move(a)));
  };
  return d;
}
XT_REGISTER_OP(sliceDef(kOnnxDomain));
XT_REGISTER_OP(sliceDef(kGraphcoreDomain));

// SliceGrad(dy) with Slice's canonical attributes and `shape` (the sliced input's shape): zeros of
// `shape` with dy written where Slice took its elements.
XT_REGISTER_OP([] {
  OpDef d{.type = "SliceGrad", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& dy = ctx.input(0);
    const Shape shape = ctx.attrs().getInts("shape");
    const Shape sliced = sliceShape(resolveSlice(ctx, shape));
    if (sliced != dy.shape()) {
      ctx.fail("the gradient {} does not match the slice {} of shape {}", dy.toString(),
               shapeToString(sliced), shapeToString(shape));
    }
    return std::vector<TensorInfo>{TensorInfo(dy.dataType(), shape)};
  };
  d.grad = [](GradContext& g) {
    if (g.needsGrad(0)) {
      g.setGradIn(0, g.emit("Slice", {g.gradOut(0)}, sliceAttrs(g.attrs()), kOnnxDomain));
    }
  };
  return d;
}());

// Expand(x, shape). Canonical form: attribute `shape`; the output is x broadcast with `shape`
// (numpy rules in both directions, as ONNX specifies).
XT_REGISTER_OP([] {
  OpDef d{.type = "Expand", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    requiredConstInputToAttr(op, graph, 1, "shape", "the target shape");
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    checkCopyable(ctx, in);
    const Shape shape = ctx.attrs().getInts("shape");
    return std::vector<TensorInfo>{
        TensorInfo(in.dataType(), broadcastShapes(ctx, in.shape(), shape))};
  };
  d.grad = [](GradContext& g) {
    if (g.needsGrad(0)) g.setGradIn(0, g.reduceToShape(g.gradOut(0), g.inputInfo(0).shape()));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
