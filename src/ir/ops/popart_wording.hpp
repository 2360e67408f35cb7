// PopART's way of writing shapes and tensor infos, for the few messages whose text PopART's
// programs match (xtrain::popart_worded_error): "[2 4 3]" and "FLOAT   [2 4 3]" (the type name
// padded to 8 characters). xtrain's own messages write FLOAT[2,4,3].
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace xtrain::ir

#pragma GCC visibility pop
