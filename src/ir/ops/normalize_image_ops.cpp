// PopART's ai.graphcore NormalizeImage(image, offsets, scales) with attribute scale (float,
// default 1): the image preprocessing PopLibs does on the IPU, normalising RGB and padding it to
// four channels for aligned loads:
//   out[..., c] = (image[..., c] * scale - offsets[c]) * scales[c]   for c < 3,   out[..., 3] = 0.
// image has rank >= 2 with 3 channels last; it is FLOAT, FLOAT16 or UINT8 (a UINT8 image gives a
// FLOAT16 output, as in PopART). offsets and scales are [3] of the output's element type. scale
// must be nonzero (PopART refuses |scale| < FLT_EPSILON).
//
// No gradient: PopART defines none (it runs on input data, before anything trainable).
#include <cmath>
#include <limits>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

XT_REGISTER_OP([] {
  OpDef d{.type = "NormalizeImage", .domain = kGraphcoreDomain, .minInputs = 3, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& image = ctx.input(0);
    const DataType t = image.dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::UINT8) {
      ctx.fail("input 0 (image) is {}, expected FLOAT, FLOAT16 or UINT8", image.toString());
    }
    if (image.rank() < 2 || image.shape().back() != 3) {
      ctx.fail("input 0 (image) is {}; it requires rank >= 2 and the inner dimension to be 3",
               image.toString());
    }
    const DataType outType = t == DataType::UINT8 ? DataType::FLOAT16 : t;
    const char* names[] = {"offsets", "scales"};
    for (size_t i = 1; i < 3; ++i) {
      const TensorInfo& v = ctx.input(i);
      if (v.dataType() != outType || v.shape() != Shape{3}) {
        ctx.fail("input {} ({}) is {}; expected {}[3], one value per channel", i, names[i - 1],
                 v.toString(), dataTypeName(outType));
      }
    }
    const float scale = ctx.attrs().getFloat("scale", 1.0f);
    if (!(std::fabs(scale) >= std::numeric_limits<float>::epsilon()) || !std::isfinite(scale)) {
      ctx.fail("attribute scale is {}; expected a finite value of magnitude >= FLT_EPSILON", scale);
    }
    Shape out = image.shape();
    out.back() = 4;
    return std::vector<TensorInfo>{TensorInfo(outType, out)};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
