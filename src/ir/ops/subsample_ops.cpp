// PopART's ai.graphcore Subsample(x) with attribute strides (one positive integer per axis of x):
// every strides[i]-th element along axis i, starting at 0, so an axis of n becomes
// ceil(n / strides[i]) (PopART's rule). Any element type (the kernel copies bytes).
//
// Gradient (PopART's SubsampleGrad): zeros of x's shape with gy at the taken positions. That is
// ai.xtrain SliceGrad with Slice's canonical attributes for "every axis whole, steps = strides",
// whose kernel the forward shares too (src/device/kernels/shape_kernels.cpp).
#include <limits>
#include <numeric>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

XT_REGISTER_OP([] {
  OpDef d{.type = "Subsample", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    if (!ctx.attrs().has("strides")) ctx.fail("attribute 'strides' (a list of ints) is required");
    const std::vector<int64_t>& strides = ctx.attrs().getInts("strides");
    if (strides.size() != x.shape().size()) {
      ctx.fail("strides {} has {} values but input 0 is {}; expected one stride per axis", strides,
               strides.size(), x.toString());
    }
    Shape out;
    for (size_t i = 0; i < strides.size(); ++i) {
      if (strides[i] < 1) {
        ctx.fail("stride {} at index {} of strides {}; expected positive strides", strides[i], i,
                 strides);
      }
      out.push_back((x.shape()[i] + strides[i] - 1) / strides[i]);
    }
    return std::vector<TensorInfo>{TensorInfo(x.dataType(), out)};
  };
  d.grad = [](GradContext& g) {
    const Shape& shape = g.inputInfo(0).shape();
    std::vector<int64_t> axes(shape.size());
    std::iota(axes.begin(), axes.end(), int64_t{0});
    Attributes a;
    a.set("starts", std::vector<int64_t>(shape.size(), 0));
    a.set("ends", std::vector<int64_t>(shape.size(), std::numeric_limits<int64_t>::max()));
    a.set("axes", std::move(axes));
    a.set("steps", g.attrs().getInts("strides"));
    a.set("shape", shape);
    g.setGradIn(0, g.emit("SliceGrad", {g.gradOut(0)}, std::move(a)));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
