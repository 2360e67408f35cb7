// PopART's ai.graphcore GroupedGather(data, indices) with attributes axis (default 0, negative
// counts from the end) and group_size (default 1): G = group_size independent Gathers, group g
// taking data[g] at indices[g] along `axis` (an axis of data, counted with the group dimension):
//   out[g] = Gather(data[g], indices[g], axis - 1),
//   out.shape = data.shape[:axis] + indices.shape[1:] + data.shape[axis+1:].
// data.shape[0] and indices.shape[0] must both be G, and axis 0 (the groups) cannot be gathered.
// With group_size 1 the op is ONNX Gather on the whole tensors, indices' first dimension included,
// as PopART computes it. Indices: INT32, INT64 or UINT32; a negative index counts from the end of
// the axis; one out of range is a runtime error.
//
// Gradient: ai.xtrain GroupedGatherGrad(dy, indices), the per-group scatter-add into zeros of the
// data's shape; its own gradient is GroupedGather again.
#include "ir/op_registry.hpp"
#include "ir/ops/indexing.hpp"

namespace xtrain::ir {
namespace {

// The output shape, after checking the group and axis rules; `axis` is made non-negative.
Shape groupedGatherShape(const ShapeContext& ctx, const TensorInfo& data, const TensorInfo& indices,
                         int64_t& axis) {
  checkIndices(ctx, indices);
  const int64_t groups = ctx.attrs().getInt("group_size", 1);
  if (data.rank() == 0)
    ctx.fail("input 0 (data) {} is a scalar; it needs rank >= 1", data.toString());
  axis = normalizeAxis(ctx, axis, data.rank());
  if (groups < 1) ctx.fail("attribute group_size is {}; expected a positive integer", groups);
  Shape idx = indices.shape();
  if (groups > 1) {
    if (axis == 0) {
      ctx.fail("axis 0 is the dimension of the groups (group_size {}); expected axis >= 1", groups);
    }
    if (data.shape()[0] != groups || indices.rank() == 0 || indices.shape()[0] != groups) {
      ctx.fail(
          "input 0 (data) {} and input 1 (indices) {} must both have group_size = {} as their "
          "first dimension",
          data.toString(), indices.toString(), groups);
    }
    idx.erase(idx.begin());
  }
  const Shape& d = data.shape();
  Shape out(d.begin(), d.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  return out;
}

Attributes gatherAttrs(int64_t axis, int64_t groups) {
  Attributes a;
  a.set("axis", axis);
  a.set("group_size", groups);
  return a;
}

XT_REGISTER_OP([] {
  OpDef d{.type = "GroupedGather", .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& data = ctx.input(0);
    int64_t axis = ctx.attrs().getInt("axis", 0);
    const Shape out = groupedGatherShape(ctx, data, ctx.input(1), axis);
    return std::vector<TensorInfo>{TensorInfo(data.dataType(), out)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const TensorInfo& data = g.inputInfo(0);
    int64_t axis = g.attrs().getInt("axis", 0);
    if (axis < 0) axis += data.rank();
    Attributes a = gatherAttrs(axis, g.attrs().getInt("group_size", 1));
    a.set("shape", data.shape());
    g.setGradIn(0, g.emit("GroupedGatherGrad", {g.gradOut(0), g.input(1)}, std::move(a)));
  };
  return d;
}());

// GroupedGatherGrad(dy, indices) with attributes axis (non-negative), group_size and shape (the
// data's shape): zeros of `shape` with every slice of dy added where GroupedGather read it
// (repeated indices add up). FLOAT / FLOAT16.
XT_REGISTER_OP([] {
  OpDef d{.type = "GroupedGatherGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& dy = ctx.input(0);
    ctx.requireFloatOrHalf(0, "dy");
    const TensorInfo data(dy.dataType(), ctx.attrs().getInts("shape"));
    int64_t axis = ctx.attrs().getInt("axis");
    const Shape want = groupedGatherShape(ctx, data, ctx.input(1), axis);
    if (dy.shape() != want) {
      ctx.fail("the gradient {} does not match GroupedGather's output shape {} (data {})",
               dy.toString(), shapeToString(want), data.toString());
    }
    return std::vector<TensorInfo>{data};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    g.setGradIn(0, g.emit("GroupedGather", {g.gradOut(0), g.input(1)},
                          gatherAttrs(g.attrs().getInt("axis"), g.attrs().getInt("group_size")),
                          kGraphcoreDomain));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
