// Shared by the windowed ops (Conv and the pools): ONNX's auto_pad turned into explicit pads.
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <string>

#include "ir/graph.hpp"

namespace xtrain::ir {

// Resolves auto_pad (SAME_UPPER, SAME_LOWER, VALID, NOTSET) into explicit pads for an input's
// spatial dims.
inline Shape resolveAutoPad(const Op& op, const std::string& autoPad, const Shape& in, const Shape& kernel,
                     const Shape& strides, const Shape& dilations, Shape pads) {
  const size_t nd = in.size();
  if (autoPad == "NOTSET" || autoPad.empty()) {
    return pads.empty() ? Shape(2 * nd, 0) : pads;
  }
  if (autoPad == "VALID") {
    return Shape(2 * nd, 0);
  }
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    throw error("{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                op.describe(), autoPad);
  }
  pads.assign(2 * nd, 0);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t out = (in[i] + strides[i] - 1) / strides[i];
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + extent - in[i]);
    // SAME_UPPER puts the odd padding element at the end, SAME_LOWER at the beginning.
    const int64_t small = total / 2;
    pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
    pads[i + nd] = total - pads[i];
  }
  return pads;
}

}  // namespace xtrain::ir

#pragma GCC visibility pop
