// Indexing ops: GatherElements, ScatterElements (and the opset 9-10 Scatter), GatherND, ScatterND,
// TopK, ArgMax and ArgMin, with the internal scatter-add gradients GatherElementsGrad and
// GatherNDGrad. Indices are INT32 or INT64; negative indices count from the end of their axis; an
// index out of range is a runtime error naming the op and the index.
#include "ir/op_registry.hpp"
#include "ir/ops/const_input.hpp"
#include "ir/ops/indexing.hpp"

namespace xtrain::ir {
namespace {

void checkCopyable(const ShapeContext& ctx, const TensorInfo& info) {
  if (dataTypeSize(info.dataType()) == 0) {
    ctx.fail("input {} has an element type that cannot be copied", info.toString());
  }
}

// Scatter reductions: "none" (all opsets), "add" and "mul" (opset 16). Internal ops (opset 0) may
// use any.
void checkReduction(const ShapeContext& ctx, const TensorInfo& data) {
  const std::string r = ctx.attrs().getString("reduction", "none");
  if (r != "none" && r != "add" && r != "mul") {
    ctx.fail("reduction '{}' is not supported; expected none, add or mul", r);
  }
  if (r != "none" && ctx.op().opset != 0 && ctx.op().opset < 16) {
    ctx.fail("reduction '{}' needs opset 16 or later; the op is opset {}", r, ctx.op().opset);
  }
  if (r != "none") {
    const DataType t = data.dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::INT32 &&
        t != DataType::INT64) {
      ctx.fail("reduction '{}' needs FLOAT, FLOAT16, INT32 or INT64 data, not {}", r,
               data.toString());
    }
  }
}

// GatherElements/ScatterElements: indices of data's rank whose dimensions other than `axis` do not
// exceed data's.
int64_t checkElementsIndices(const ShapeContext& ctx, const TensorInfo& data,
                             const TensorInfo& indices) {
  checkIndices(ctx, indices);
  if (data.rank() == 0) ctx.fail("data {} is a scalar; it needs rank >= 1", data.toString());
  const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis", 0), data.rank());
  if (indices.rank() != data.rank()) {
    ctx.fail("indices {} must have the rank of data {}", indices.toString(), data.toString());
  }
  for (int64_t d = 0; d < data.rank(); ++d) {
    const auto u = static_cast<size_t>(d);
    if (d != axis && indices.shape()[u] > data.shape()[u]) {
      ctx.fail("indices {} exceed data {} in dimension {} (only the axis {} may be larger)",
               indices.toString(), data.toString(), d, axis);
    }
  }
  return axis;
}

// GatherElements(data, indices) with attribute axis (default 0): out[p] = data[p with p[axis]
// replaced by indices[p]]; the output has the indices' shape. Opsets 11 and 13 agree.
XT_REGISTER_OP([] {
  OpDef d{.type = "GatherElements", .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& data = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    checkCopyable(ctx, data);
    checkElementsIndices(ctx, data, indices);
    return std::vector<TensorInfo>{TensorInfo(data.dataType(), indices.shape())};
  };
  d.grad = [](GradContext& g) { gatherGrad(g, "GatherElementsGrad", "axis"); };
  return d;
}());

// GatherElementsGrad(dy, indices) with attributes axis and shape (the data's shape): zeros of
// `shape` with every element of dy added where GatherElements read it (repeated indices add up).
XT_REGISTER_OP([] {
  OpDef d{.type = "GatherElementsGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& dy = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    ctx.requireFloatOrHalf(0, "dy");
    const TensorInfo data(dy.dataType(), ctx.attrs().getInts("shape"));
    checkElementsIndices(ctx, data, indices);
    if (dy.shape() != indices.shape()) {
      ctx.fail("the gradient {} must have the shape of indices {}", dy.toString(),
               indices.toString());
    }
    return std::vector<TensorInfo>{data};
  };
  d.grad = [](GradContext& g) { scatterAddGrad(g, "GatherElements", "axis"); };
  return d;
}());

Shape gatherNDShape(const ShapeContext& ctx, const TensorInfo& data, const TensorInfo& indices,
                    int64_t batchDims);

// Gradients of ScatterElements and ScatterND, which differ only in the gather op that reads the
// updates' share of dy.
// The gradient of larger updates: the gathered gradient (the indices' shape) padded with zeros at
// the end of every axis.
TensorId padToUpdates(GradContext& g, const TensorId& gathered) {
  const Shape& u = g.inputInfo(2).shape();
  const Shape& i = g.inputInfo(1).shape();
  if (u == i) return gathered;
  Shape pads(2 * u.size(), 0);
  for (size_t d = 0; d < u.size(); ++d) pads[u.size() + d] = u[d] - i[d];
  Attributes a;
  a.set("pads", pads);
  return g.emit("Pad", {gathered}, std::move(a), kOnnxDomain);
}

// elementsUpdates: ScatterElements, whose updates may be larger than its indices.
void scatterGrad(GradContext& g, const char* scatterType, const char* gatherType,
                 const Attributes& gatherAttrs, bool elementsUpdates = false) {
  const std::string reduction = g.attrs().getString("reduction", "none");
  const TensorId& dy = g.gradOut(0);
  if (g.needsGrad(0)) {
    if (reduction == "add") {
      g.setGradIn(0, dy);
    } else if (reduction == "none") {
      // The scattered positions were overwritten: their data gets no gradient.
      Attributes a = g.attrs();
      TensorId zeros = g.constant(HostTensor(g.inputInfo(2)), "scatter_zero_updates");
      g.setGradIn(0, g.emit(scatterType, {dy, g.input(1), zeros}, std::move(a), kOnnxDomain));
    } else {  // mul: dy times the product of the updates that multiplied each position
      Attributes a = g.attrs();
      g.setGradIn(0, g.emit(scatterType, {dy, g.input(1), g.input(2)}, std::move(a), kOnnxDomain));
    }
  }
  if (g.needsGrad(2)) {
    if (reduction == "mul") {
      // d out / d update_j = dy * data * (the product of the other updates at that position).
      Attributes a = gatherAttrs;
      a.set("kind", std::string(scatterType));
      g.setGradIn(2, g.emit("ScatterMulUpdatesGrad", {dy, g.input(0), g.input(1), g.input(2)},
                            std::move(a)));
      return;
    }
    TensorId gathered = g.emit(gatherType, {dy, g.input(1)}, gatherAttrs, kOnnxDomain);
    g.setGradIn(2, elementsUpdates ? padToUpdates(g, gathered) : gathered);
  }
}

// ScatterMulUpdatesGrad(dy, data, indices, updates) with attribute kind ("ScatterElements", with
// its axis, or "ScatterND"): the gradient of a scatter with reduction=mul with respect to its
// updates, dy * data * the product of the other updates that multiplied the same position (zeros
// counted exactly, no division by a zero update).
XT_REGISTER_OP([] {
  OpDef d{.type = "ScatterMulUpdatesGrad", .domain = kXtrainDomain, .minInputs = 4, .maxInputs = 4};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "dy");
    const TensorInfo& dy = ctx.input(0);
    const TensorInfo& data = ctx.input(1);
    const TensorInfo& updates = ctx.input(3);
    if (dy.shape() != data.shape() || updates.dataType() != dy.dataType()) {
      ctx.fail("dy {}, data {} and updates {} do not fit", dy.toString(), data.toString(),
               updates.toString());
    }
    const std::string kind = ctx.attrs().getString("kind");
    if (kind == "ScatterElements") {
      checkElementsIndices(ctx, data, ctx.input(2));
      if (updates.shape() != ctx.input(2).shape()) ctx.fail("updates do not fit the indices");
    } else if (kind == "ScatterND") {
      if (updates.shape() != gatherNDShape(ctx, data, ctx.input(2), 0)) {
        ctx.fail("updates do not fit the indices");
      }
    } else {
      ctx.fail("kind '{}' is not ScatterElements or ScatterND", kind);
    }
    return std::vector<TensorInfo>{updates};
  };
  return d;
}());

// Whether ScatterElements' updates fit its indices: the same shape or, without a reduction,
// at least as large along every axis (PopART's Scatter, like torch.scatter_, uses the leading
// corner of larger updates).
bool holdsIndicesShape(const TensorInfo& updates, const TensorInfo& indices) {
  if (updates.shape() == indices.shape()) return true;
  if (updates.rank() != indices.rank()) return false;
  for (int64_t d = 0; d < updates.rank(); ++d) {
    if (updates.dim(d) < indices.dim(d)) return false;
  }
  return true;
}

// ScatterElements(data, indices, updates) with attributes axis (default 0) and reduction (opset
// 16: none, add, mul): a copy of data where out[p with p[axis] replaced by indices[p]] is set to
// (or combined with) updates[p]. Scatter (opsets 9-10) is the same op without reduction. Without a
// reduction updates may be larger than indices (PopART's rule): the element at each indices
// position is used, the rest are ignored (their gradient is 0).
OpDef scatterElements(const std::string& type) {
  OpDef d{.type = type, .minInputs = 3, .maxInputs = 3};
  if (type == "Scatter") d.rewrittenTo = "ScatterElements";
  d.canonicalize = [](Op& op, const Graph&) {
    if (op.type == "Scatter") {
      op.type = "ScatterElements";
      op.attrs.setOwner(op.describe());
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& data = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    const TensorInfo& updates = ctx.input(2);
    checkCopyable(ctx, data);
    checkElementsIndices(ctx, data, indices);
    const bool plain = ctx.attrs().getString("reduction", "none") == "none";
    const bool fits = plain ? holdsIndicesShape(updates, indices)
                            : updates.shape() == indices.shape();
    if (updates.dataType() != data.dataType() || !fits) {
      ctx.fail("updates {} must have data's type ({}) and the indices' shape {}{}",
               updates.toString(), dataTypeName(data.dataType()), shapeToString(indices.shape()),
               plain ? " (or, as PopART allows, be at least as large along every axis)" : "");
    }
    checkReduction(ctx, data);
    return std::vector<TensorInfo>{data};
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("axis", g.attrs().getInt("axis", 0));
    scatterGrad(g, "ScatterElements", "GatherElements", a, true);
  };
  return d;
}

XT_REGISTER_OP(scatterElements("ScatterElements"));
XT_REGISTER_OP(scatterElements("Scatter"));

// GatherND output shape: batch dims + indices.shape[b:-1] + data.shape[b+k:].
Shape gatherNDShape(const ShapeContext& ctx, const TensorInfo& data, const TensorInfo& indices,
                    int64_t batchDims) {
  checkIndices(ctx, indices);
  if (indices.rank() < 1) ctx.fail("indices {} need rank >= 1", indices.toString());
  if (batchDims < 0 || batchDims >= std::min(data.rank(), indices.rank())) {
    ctx.fail(
        "batch_dims {} must be in [0, min(rank(data), rank(indices))) for data {} and "
        "indices {}",
        batchDims, data.toString(), indices.toString());
  }
  const auto b = static_cast<size_t>(batchDims);
  for (size_t i = 0; i < b; ++i) {
    if (data.shape()[i] != indices.shape()[i]) {
      ctx.fail("batch dimension {} differs: data {} and indices {}", i, data.toString(),
               indices.toString());
    }
  }
  const int64_t k = indices.shape().back();
  if (k < 1 || batchDims + k > data.rank()) {
    ctx.fail(
        "indices {} index {} dimensions, but data {} has only {} after the {} batch "
        "dimensions",
        indices.toString(), k, data.toString(), data.rank() - batchDims, batchDims);
  }
  Shape out(indices.shape().begin(), indices.shape().end() - 1);
  out.insert(out.end(), data.shape().begin() + batchDims + k, data.shape().end());
  return out;
}

// GatherND(data, indices) with attribute batch_dims (opset 12; default 0): each innermost tuple
// of indices names a slice of data (within its batch).
XT_REGISTER_OP([] {
  OpDef d{.type = "GatherND", .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& data = ctx.input(0);
    checkCopyable(ctx, data);
    const int64_t b = ctx.attrs().getInt("batch_dims", 0);
    if (b != 0 && ctx.op().opset != 0 && ctx.op().opset < 12) {
      ctx.fail("batch_dims needs opset 12 or later; the op is opset {}", ctx.op().opset);
    }
    return std::vector<TensorInfo>{
        TensorInfo(data.dataType(), gatherNDShape(ctx, data, ctx.input(1), b))};
  };
  d.grad = [](GradContext& g) { gatherGrad(g, "GatherNDGrad", "batch_dims"); };
  return d;
}());

// GatherNDGrad(dy, indices) with attributes batch_dims and shape (the data's shape): zeros of
// `shape` with each slice of dy added where GatherND read it.
XT_REGISTER_OP([] {
  OpDef d{.type = "GatherNDGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& dy = ctx.input(0);
    ctx.requireFloatOrHalf(0, "dy");
    const TensorInfo data(dy.dataType(), ctx.attrs().getInts("shape"));
    const Shape want = gatherNDShape(ctx, data, ctx.input(1), ctx.attrs().getInt("batch_dims", 0));
    if (dy.shape() != want) {
      ctx.fail("the gradient {} does not match GatherND's output shape {}", dy.toString(),
               shapeToString(want));
    }
    return std::vector<TensorInfo>{data};
  };
  d.grad = [](GradContext& g) { scatterAddGrad(g, "GatherND", "batch_dims"); };
  return d;
}());

// ScatterND(data, indices, updates) with attribute reduction (opset 16: none, add, mul): a copy of
// data with the slices the index tuples name set to (or combined with) the slices of updates.
XT_REGISTER_OP([] {
  OpDef d{.type = "ScatterND", .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& data = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    const TensorInfo& updates = ctx.input(2);
    checkCopyable(ctx, data);
    if (data.rank() == 0) ctx.fail("data {} is a scalar; it needs rank >= 1", data.toString());
    const Shape want = gatherNDShape(ctx, data, indices, 0);
    if (updates.dataType() != data.dataType() || updates.shape() != want) {
      ctx.fail("updates {} must be {} {} (indices.shape[:-1] + data.shape[k:])", updates.toString(),
               dataTypeName(data.dataType()), shapeToString(want));
    }
    checkReduction(ctx, data);
    return std::vector<TensorInfo>{data};
  };
  d.grad = [](GradContext& g) { scatterGrad(g, "ScatterND", "GatherND", Attributes()); };
  return d;
}());

// TopK(X[, K]) with attributes axis (default -1), largest and sorted (opset 11; default 1). Opset
// 1-9: attribute k; 10+: input K. Canonical form: attribute `k`. Outputs: values and INT64
// indices; equal values keep their order (lower index first).
XT_REGISTER_OP([] {
  OpDef d{.type = "TopK", .minInputs = 1, .maxInputs = 2, .minOutputs = 2, .maxOutputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.hasInput(1)) {
      if (op.attrs.has("k")) {
        throw error("{}: k is given both as an attribute and as input 1", op.describe());
      }
      const HostTensor* v = requireConstInput(op, graph, 1, "K");
      if (v->nelms() != 1 || !isInteger(v->dataType())) {
        throw error("{}: input 1 (K) is {}; expected one INT64 value", op.describe(),
                    v->info().toString());
      }
      op.attrs.set("k", static_cast<int64_t>(v->getAsDouble(0)));
      op.inputs[1].clear();
    }
    if (!op.attrs.has("k")) throw error("{}: needs k (input 1 or attribute 'k')", op.describe());
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    const DataType t = x.dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::INT32 &&
        t != DataType::INT64) {
      ctx.fail("input {} must be FLOAT, FLOAT16, INT32 or INT64", x.toString());
    }
    if (x.rank() == 0) ctx.fail("input {} is a scalar; it needs rank >= 1", x.toString());
    const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis", -1), x.rank());
    const int64_t k = ctx.attrs().getInt("k");
    const int64_t dim = x.shape()[static_cast<size_t>(axis)];
    if (k < 0 || k > dim) {
      ctx.fail("k is {} but axis {} of the input {} has {} elements", k, axis, x.toString(), dim);
    }
    Shape out = x.shape();
    out[static_cast<size_t>(axis)] = k;
    return std::vector<TensorInfo>{TensorInfo(x.dataType(), out), TensorInfo(DataType::INT64, out)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const TensorInfo& x = g.inputInfo(0);
    int64_t axis = g.attrs().getInt("axis", -1);
    if (axis < 0) axis += x.rank();
    Attributes a;
    a.set("axis", axis);
    a.set("shape", x.shape());
    g.setGradIn(0, g.emit("GatherElementsGrad", {g.gradOutOrZeros(0), g.output(1)}, std::move(a)));
  };
  return d;
}());

// ArgMax/ArgMin(data) with attributes axis (default 0), keepdims (default 1) and
// select_last_index (opset 12; default 0). Output INT32, as PopART's (ONNX says INT64; PopART keeps
// indices in 32 bits, as the IPU does, and its users read INT32 arrays).
OpDef argOp(const std::string& type) {
  OpDef d{.type = type};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    const DataType t = x.dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::INT32 &&
        t != DataType::INT64) {
      ctx.fail("input {} must be FLOAT, FLOAT16, INT32 or INT64", x.toString());
    }
    if (x.rank() == 0) ctx.fail("input {} is a scalar; it needs rank >= 1", x.toString());
    const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis", 0), x.rank());
    if (x.shape()[static_cast<size_t>(axis)] == 0) {
      ctx.fail("axis {} of the input {} is empty; there is no extremum", axis, x.toString());
    }
    if (ctx.attrs().getInt("select_last_index", 0) != 0 && ctx.op().opset != 0 &&
        ctx.op().opset < 12) {
      ctx.fail("select_last_index needs opset 12 or later; the op is opset {}", ctx.op().opset);
    }
    Shape out = x.shape();
    if (ctx.attrs().getInt("keepdims", 1) != 0) {
      out[static_cast<size_t>(axis)] = 1;
    } else {
      out.erase(out.begin() + axis);
    }
    return std::vector<TensorInfo>{TensorInfo(DataType::INT32, out)};
  };
  return d;
}
XT_REGISTER_OP(argOp("ArgMax"));
XT_REGISTER_OP(argOp("ArgMin"));

}  // namespace
}  // namespace xtrain::ir
