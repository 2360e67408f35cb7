// Gather (embedding lookups among others) and its gradient GatherGrad, a scatter-add.
#include "ir/op_registry.hpp"
#include "ir/ops/indexing.hpp"

namespace xtrain::ir {
namespace {

// data.shape[:axis] + indices.shape + data.shape[axis+1:]
Shape gatherShape(const Shape& data, const Shape& indices, int64_t axis) {
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

// Gather(data, indices) with attribute axis (default 0, negative allowed). Indices are INT32 or
// INT64; negative indices count from the end of the axis; an out-of-range index is a runtime error.
// Canonical form: as ONNX (opsets 11-17 agree).
XT_REGISTER_OP([] {
  OpDef d{.type = "Gather", .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& data = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    checkIndices(ctx, indices);
    if (data.rank() == 0) ctx.fail("data {} is a scalar; it needs rank >= 1", data.toString());
    if (dataTypeSize(data.dataType()) == 0) {
      ctx.fail("data {} has an element type that cannot be copied", data.toString());
    }
    const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis", 0), data.rank());
    return std::vector<TensorInfo>{
        TensorInfo(data.dataType(), gatherShape(data.shape(), indices.shape(), axis))};
  };
  d.grad = [](GradContext& g) { gatherGrad(g, "GatherGrad", "axis"); };
  return d;
}());

// GatherGrad(dy, indices) with attributes axis (non-negative) and shape (Gather's data shape):
// zeros of `shape` to which every slice of dy is added at the position its index names (repeated
// indices add up).
XT_REGISTER_OP([] {
  OpDef d{.type = "GatherGrad", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& dy = ctx.input(0);
    const TensorInfo& indices = ctx.input(1);
    checkIndices(ctx, indices);
    const Shape shape = ctx.attrs().getInts("shape");
    if (shape.empty()) ctx.fail("shape {} must have rank >= 1", shapeToString(shape));
    const int64_t axis =
        normalizeAxis(ctx, ctx.attrs().getInt("axis"), static_cast<int64_t>(shape.size()));
    const Shape want = gatherShape(shape, indices.shape(), axis);
    if (dy.shape() != want) {
      ctx.fail("the gradient {} does not match Gather's output shape {} (data {}, indices {})",
               dy.toString(), shapeToString(want), shapeToString(shape), indices.toString());
    }
    return std::vector<TensorInfo>{TensorInfo(dy.dataType(), shape)};
  };
  d.grad = [](GradContext& g) { scatterAddGrad(g, "Gather", "axis"); };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
