#include "ir/builder/window_checks.hpp"

#include <optional>

#include "ir/ops/popart_wording.hpp"
#include "xtrain/popart_error.hpp"

namespace xtrain {

namespace {

// The tensor's shape when the Builder knows it.
std::optional<Shape> knownShape(BuilderImpl& impl, const TensorId& id) {
  try {
    return impl.tensorInfo(id).shape();
  } catch (const error&) {
    return std::nullopt;
  }
}

[[noreturn]] void fail(const std::string& popart, const char* method, const std::string& ours) {
  throw popart_worded_error(popart, popart + " (Builder: " + method + ": " + ours + ")");
}

// floor(a / b) for b > 0.
int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceilDiv(int64_t a, int64_t b) {
  return -floorDiv(-a, b);
}

}  // namespace

void verifyWindow(BuilderImpl& impl, const char* method, const TensorId& input,
                  const WindowParams& p) {
  if (p.autoPad != "NOTSET" && p.autoPad != "SAME_UPPER" && p.autoPad != "SAME_LOWER" &&
      p.autoPad != "VALID") {
    throw error("Builder: {}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                method, p.autoPad);
  }
  const std::optional<Shape> shape = knownShape(impl, input);
  if (!shape) return;  // the import checks it
  if (shape->size() < 3) {
    fail("Input tensor has no spatial dimensions", method,
         xtrain::format("input '{}' has shape {}; expected N x C x spatial dimensions", input,
                        *shape));
  }
  const size_t n = shape->size() - 2;
  auto checkLength = [&](const std::vector<int64_t>& v, size_t per, const std::string& popart,
                         const char* name) {
    if (v.empty() || v.size() == per * n) return;
    fail(popart, method,
         xtrain::format("{} {} has {} values; input '{}' of shape {} has {} spatial dimensions",
                        name, v, v.size(), input, *shape, n));
  };
  checkLength(p.strides, 1,
              xtrain::format("Length of strides vector {} != number of spatial dimensions {}",
                             p.strides.size(), n),
              "strides");
  checkLength(p.pads, 2,
              xtrain::format("Padding vector (length {}) does not have 2 values for each spatial "
                             "dimension {}",
                             p.pads.size(), n),
              "pads");
  checkLength(p.dilations, 1,
              xtrain::format("Length of dilations vector {} != number of spatial dimensions {}",
                             p.dilations.size(), n),
              "dilations");
  if (p.kernelShape.size() != n) return;  // the import names a kernel of the wrong rank
  if (p.autoPad == "SAME_UPPER" || p.autoPad == "SAME_LOWER") return;  // ceil(in / stride) > 0
  const bool valid = p.autoPad == "VALID";
  std::vector<int64_t> out;
  bool negative = false;
  for (size_t i = 0; i < n; ++i) {
    const int64_t stride = p.strides.empty() ? 1 : p.strides[i];
    const int64_t dilation = p.dilations.empty() ? 1 : p.dilations[i];
    const int64_t pads = p.pads.empty() || valid ? 0 : p.pads[i] + p.pads[n + i];
    if (stride <= 0 || dilation <= 0) return;  // the import names them
    const int64_t span = (*shape)[i + 2] + pads - 1 - dilation * (p.kernelShape[i] - 1);
    out.push_back((p.ceilMode ? ceilDiv(span, stride) : floorDiv(span, stride)) + 1);
    negative = negative || out.back() < 0;
  }
  if (negative) {
    fail("Window parameter values combine to give invalid spatial output shape: " +
             ir::popartSequence(out),
         method,
         xtrain::format("input '{}' of shape {} with kernel {}, strides {}, pads {}, dilations {}",
                        input, *shape, p.kernelShape, p.strides, p.pads, p.dilations));
  }
}

void verifyConv(BuilderImpl& impl, const std::vector<TensorId>& args, WindowParams p) {
  if (args.size() < 2) return;  // checkArity names it
  if (const std::optional<Shape> w = knownShape(impl, args[1]); w && w->size() >= 2) {
    const std::vector<int64_t> fromWeights(w->begin() + 2, w->end());
    if (p.kernelShape.empty()) {
      p.kernelShape = fromWeights;
    } else if (p.kernelShape != fromWeights) {
      fail(xtrain::format("kernel_shape, {}, does not match inferred shape from weight input "
                          "'{}', {}",
                          ir::popartSequence(p.kernelShape), args[1],
                          ir::popartSequence(fromWeights)),
           "conv", xtrain::format("the weights '{}' have shape {}", args[1], *w));
    }
  }
  verifyWindow(impl, "conv", args[0], p);
}

void setAutoPadAttr(onnx::NodeProto& node, const std::string& autoPad) {
  if (autoPad != "NOTSET") setStringAttr(node, "auto_pad", autoPad);
}

}  // namespace xtrain
