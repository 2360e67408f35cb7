// PopART's way of writing shapes and tensor infos, for the few messages whose text PopART's
// programs match (xtrain::popart_worded_error): "[2 4 3]" and "FLOAT   [2 4 3]" (the type name
// padded to 8 characters). xtrain's own messages write FLOAT[2,4,3].
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "xtrain/format.hpp"
#include "xtrain/popart_error.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::ir {

inline std::string popartSequence(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

inline std::string popartInfo(const TensorInfo& info) {
  std::string type = dataTypeName(info.dataType());
  if (type.size() < 8) type.resize(8, ' ');
  return type + popartSequence(info.shape());
}

// PopART's message for an axis outside [-rank, rank - 1].
inline std::string popartAxisOutOfRange(int64_t axis, int64_t rank) {
  return "Axis " + std::to_string(axis) + " is out of acceptable range [" + std::to_string(-rank) +
         ", " + std::to_string(rank - 1) + "]";
}

// PopART's name of an op in its messages: "Op(ai.onnx.Add:7, inputs=[a, b], outputs=[c])".
// `version` is the op's version in PopART (the opset that last changed it); 0 writes the model's
// opset instead, which is the same number unless the op changed before that opset.
inline std::string popartOpName(const Op& op, int64_t version = 0) {
  std::string ins;
  std::string outs;
  for (const auto& in : op.inputs) ins += (ins.empty() ? "" : ", ") + in;
  for (const auto& out : op.outputs) outs += (outs.empty() ? "" : ", ") + out;
  return xtrain::format("Op({}.{}:{}, inputs=[{}], outputs=[{}])", op.domain, op.type,
                        version > 0 ? version : op.opset, ins, outs);
}

}  // namespace xtrain::ir

#pragma GCC visibility pop
