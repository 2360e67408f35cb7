// Shared by the gather ops (Gather in gather_ops.cpp, GatherElements and GatherND in
// index_ops.cpp): the index type check and the gradient pair each of them has, a scatter-add op
// in ai.xtrain whose own gradient is the gather again.
#pragma once
#pragma GCC visibility push(default)

#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {

// ONNX's index types, and UINT32, which PopART's gathers take as well.
inline void checkIndices(const ShapeContext& ctx, const TensorInfo& indices) {
  const DataType t = indices.dataType();
  if (t != DataType::INT32 && t != DataType::INT64 && t != DataType::UINT32) {
    ctx.fail("indices {} must be INT32, INT64 or UINT32", indices.toString());
  }
}

// The gradient of gather op (data, indices) with respect to data: `scatterAddType`(dy, indices)
// with the gather's attribute `attr` ("axis", made non-negative, or "batch_dims"; default 0) and
// `shape`, the data's shape. Indices get no gradient.
inline void gatherGrad(GradContext& g, const char* scatterAddType, const char* attr) {
  if (!g.needsGrad(0)) return;
  const TensorInfo& data = g.inputInfo(0);
  int64_t value = g.attrs().getInt(attr, 0);
  if (value < 0) value += data.rank();  // a negative axis counts from the end
  Attributes a;
  a.set(attr, value);
  a.set("shape", data.shape());
  g.setGradIn(0, g.emit(scatterAddType, {g.gradOut(0), g.input(1)}, std::move(a)));
}

// The gradient of a scatter-add op made by gatherGrad with respect to dy: the ai.onnx gather op
// `gatherType` of the gradient at the same indices, with the same `attr`.
inline void scatterAddGrad(GradContext& g, const char* gatherType, const char* attr) {
  if (!g.needsGrad(0)) return;
  Attributes a;
  a.set(attr, g.attrs().getInt(attr, 0));
  g.setGradIn(0, g.emit(gatherType, {g.gradOut(0), g.input(1)}, std::move(a), kOnnxDomain));
}

}  // namespace xtrain::ir

#pragma GCC visibility pop
