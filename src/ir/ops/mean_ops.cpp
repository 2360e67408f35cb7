// ai.onnx Mean(x0, x1, ...): the elementwise mean of one or more FLOAT / FLOAT16 tensors of one
// element type. From opset 8 the inputs broadcast (numpy rules) to the output; before it (Mean-6)
// they must all have one shape, and PopART refuses others with "Inputs to ai.onnx.Mean:6 do not
// all the same type & shape" (its tests compare that sentence), so the message starts with it.
//
// Gradient (PopART's MeanArgGrad): input i gets gy / n summed over the dimensions broadcasting
// added to it: one ai.graphcore Scale and a reduceToShape.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

XT_REGISTER_OP([] {
  OpDef d{.type = "Mean", .minInputs = 1, .maxInputs = -1};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalfInputs();
    // Opset 0 is an internal op: the broadcasting form.
    const bool broadcasts = ctx.op().opset == 0 || ctx.op().opset >= 8;
    TensorInfo out = ctx.input(0);
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      const TensorInfo& in = ctx.input(i);
      if (!broadcasts && (in.dataType() != out.dataType() || in.shape() != out.shape())) {
        ctx.fail(
            "Inputs to ai.onnx.Mean:6 do not all the same type & shape: input {} is {} and "
            "input 0 is {} (Mean broadcasts from opset 8)",
            i, in.toString(), out.toString());
      }
      if (in.dataType() != out.dataType()) {
        ctx.fail("input {} is {} but input 0 is {}; expected one element type", i, in.toString(),
                 out.toString());
      }
      out = TensorInfo(out.dataType(), broadcastShapes(ctx, out.shape(), in.shape()));
    }
    return std::vector<TensorInfo>{out};
  };
  d.grad = [](GradContext& g) {
    const size_t n = g.op().inputs.size();
    Attributes a;
    a.set("scale", 1.0f / static_cast<float>(n));
    const TensorId scaled = g.emit("Scale", {g.gradOut(0)}, a, kGraphcoreDomain);
    for (size_t i = 0; i < n; ++i) {
      if (g.needsGrad(i)) g.setGradIn(i, g.reduceToShape(scaled, g.inputInfo(i).shape()));
    }
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
