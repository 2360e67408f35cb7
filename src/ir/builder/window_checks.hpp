// The Builder's checks of a windowed op's parameters (Conv, MaxPool, AveragePool) when the node is
// added, as PopART's Builder makes them: the lengths of strides, pads and dilations against the
// input's spatial rank, a Conv's kernel_shape against its weights, and an output of negative size.
// Each is made only when the shapes it needs are known. The messages start with PopART's words
// (PopART's programs match them) and go on to name the Builder method and the tensors.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

struct WindowParams {
  std::vector<int64_t> kernelShape;  // empty: not known (a Conv without kernel_shape)
  std::vector<int64_t> strides, pads, dilations;
  bool ceilMode = false;
  // ONNX's auto_pad: NOTSET uses pads; SAME_UPPER and SAME_LOWER give ceil(in / stride)
  // outputs whatever the kernel; VALID pads nothing.
  std::string autoPad = "NOTSET";
};

// Checks the parameters of `method`'s window over `input` (N x C x spatial...).
void verifyWindow(BuilderImpl& impl, const char* method, const TensorId& input,
                  const WindowParams& p);

// A Conv's checks: kernel_shape against the weights' spatial shape (args[1]), then the window, with
// the kernel shape taken from the weights when kernel_shape is not given.
void verifyConv(BuilderImpl& impl, const std::vector<TensorId>& args, WindowParams p);

// Sets a windowed node's auto_pad attribute unless it is NOTSET (ONNX's default, left out as
// PopART's Builder leaves it out).
void setAutoPadAttr(onnx::NodeProto& node, const std::string& autoPad);

}  // namespace xtrain

#pragma GCC visibility pop
