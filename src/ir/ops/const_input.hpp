// Helpers for ops whose static configuration ONNX passes as inputs in newer opsets and as
// attributes in older ones: canonicalize moves a constant input into an attribute.
#pragma once
#pragma GCC visibility push(default)

#include <optional>
#include <string>
#include <vector>

#include "ir/op_registry.hpp"

namespace xtrain::ir {

// Moves constant integer input `index` into the ints attribute `name` and marks the input absent.
// Accepts either form at any opset (internal gradient ops carry opset 0 and use the attribute);
// both at once is an error. INT64/INT32 values are read exactly (INT64_MAX survives).
inline void constInputToAttr(Op& op, const Graph& graph, size_t index, const std::string& name) {
  if (!op.hasInput(index)) return;
  if (op.attrs.has(name)) {
    throw error("{}: '{}' is given both as an attribute and as input {}; give one", op.describe(),
                name, index);
  }
  const Tensor& t = graph.tensor(op.inputs[index]);
  if (t.kind == TensorKind::Const && t.value &&
      (t.value->dataType() == DataType::INT64 || t.value->dataType() == DataType::INT32)) {
    std::vector<int64_t> values;
    if (t.value->dataType() == DataType::INT64) {
      values = t.value->toVector<int64_t>();
    } else {
      for (int32_t v : t.value->span<int32_t>()) values.push_back(v);
    }
    op.attrs.set(name, std::move(values));
    op.inputs[index].clear();
    return;
  }
  moveConstInputToAttr(op, graph, index, name);  // reports a non-constant input
}

// constInputToAttr for configuration the op cannot do without: throws naming the op and `what`
// (e.g. "the target shape") when neither input `index` nor attribute `name` gives it.
inline void requiredConstInputToAttr(Op& op, const Graph& graph, size_t index,
                                     const std::string& name, const char* what) {
  constInputToAttr(op, graph, index, name);
  if (!op.attrs.has(name)) {
    throw error("{}: needs {} (input {} or attribute '{}')", op.describe(), what, index, name);
  }
}

// The value of constant input `index` (any element type), or nullptr when it is absent. Throws
// naming the op and `what` when the input is present but not a constant.
inline const HostTensor* requireConstInput(const Op& op, const Graph& graph, size_t index,
                                           const char* what) {
  if (!op.hasInput(index)) return nullptr;
  const Tensor& t = graph.tensor(op.inputs[index]);
  if (t.kind != TensorKind::Const || !t.value) {
    throw error(
        "{}: input {} ({}, '{}') must be a constant; xtrain needs it when the graph is built",
        op.describe(), index, what, op.inputs[index]);
  }
  return t.value.get();
}

}  // namespace xtrain::ir

#pragma GCC visibility pop
