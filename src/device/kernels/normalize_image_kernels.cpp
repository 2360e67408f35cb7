// Kernel of ai.graphcore NormalizeImage (src/ir/ops/normalize_image_ops.cpp). FLOAT offsets,
// scales and output (a FLOAT16 spec runs promoted; a UINT8 image stays UINT8 and is read as is).
#include <cstdint>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

template <typename T>
void normalize(const KernelIO& io, float scale) {
  const T* img = io.in(0).data<T>();
  const float* offsets = io.in(1).data<float>();
  const float* scales = io.in(2).data<float>();
  float* out = io.out(0).data<float>();
  const int64_t pixels = io.out(0).nelms() / 4;
  for (int64_t p = 0; p < pixels; ++p) {
    for (int64_t c = 0; c < 3; ++c) {
      out[4 * p + c] = (static_cast<float>(img[3 * p + c]) * scale - offsets[c]) * scales[c];
    }
    out[4 * p + 3] = 0.0f;
  }
}

XT_REGISTER_KERNEL(
    "ai.graphcore", "NormalizeImage", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      const DataType image = spec.inputs.at(0).dataType();
      for (size_t i = 1; i < 3; ++i) {
        if (spec.inputs.at(i).dataType() != DataType::FLOAT) {
          spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
        }
      }
      if (spec.outputs.at(0).dataType() != DataType::FLOAT) {
        spec.fail("output {}: only FLOAT is supported", spec.outputs[0].toString());
      }
      const float scale = spec.attrs.getFloat("scale", 1.0f);
      if (image == DataType::UINT8) {
        return makeKernel([scale](const KernelIO& io) { normalize<uint8_t>(io, scale); });
      }
      if (image != DataType::FLOAT)
        spec.fail("image {}: only FLOAT or UINT8", spec.inputs[0].toString());
      return makeKernel([scale](const KernelIO& io) { normalize<float>(io, scale); });
    });

}  // namespace
}  // namespace xtrain::device
