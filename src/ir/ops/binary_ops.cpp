// Elementwise binary ops with numpy broadcasting (Add, Sub, Mul, Div), the variadic Sum, and the
// internal ReduceSumToShape used by their gradients. FLOAT, FLOAT16, INT32 and INT64 (and INT8 and
// UINT8 in the IR, which the device refuses); integer tensors (the shape arithmetic exporters
// write) get no gradient.
#include <algorithm>

#include "ir/op_registry.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {
namespace {

bool isFloatScalar(const TensorInfo& t) {
  return t.dataType() == DataType::FLOAT && t.nelms() == 1;
}

// Mul's one mixed case, as PopART's: a FLOAT16 tensor times a one-element FLOAT tensor (either
// side) is FLOAT16.
bool isHalfTimesFloatScalar(const TensorInfo& a, const TensorInfo& b) {
  const auto halfOrScalar = [](const TensorInfo& t) {
    return t.dataType() == DataType::FLOAT16 || isFloatScalar(t);
  };
  return a.dataType() != b.dataType() && halfOrScalar(a) && halfOrScalar(b);
}

std::vector<TensorInfo> inferBroadcast(const ShapeContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(1);
  if (ctx.op().type == "Mul" && isHalfTimesFloatScalar(a, b)) {
    return {TensorInfo(DataType::FLOAT16, broadcastShapes(ctx, a.shape(), b.shape()))};
  }
  if (a.dataType() != b.dataType()) {
    ctx.fail(
        "inputs have different types {} and {}: np broadcasting failed, incompatible types {} "
        "and {} (shapes {} and {})",
        a.toString(), b.toString(), dataTypeName(a.dataType()), dataTypeName(b.dataType()),
        popartSequence(a.shape()), popartSequence(b.shape()));
  }
  const DataType t = a.dataType();
  // INT8 and UINT8 pass, as PopART's IR passes them (8-bit host streams); the device refuses them
  // at prepareDevice (device_program_error, Poplar's compile failure in PopART).
  if (!isFloatingPoint(t) && t != DataType::INT32 && t != DataType::INT64 && t != DataType::INT8 &&
      t != DataType::UINT8) {
    ctx.fail("inputs are {}, expected FLOAT, FLOAT16, INT32, INT64, INT8 or UINT8",
             dataTypeName(t));
  }
  return {TensorInfo(a.dataType(), broadcastShapes(ctx, a.shape(), b.shape()))};
}

OpDef binary(const std::string& type, std::function<void(GradContext&)> grad) {
  OpDef d{.type = type, .minInputs = 2, .maxInputs = 2};
  d.infer = inferBroadcast;
  // Integer tensors (shape computations) carry no gradient.
  d.grad = [grad = std::move(grad)](GradContext& g) {
    if (isFloatingPoint(g.outputInfo(0).dataType())) grad(g);
  };
  return d;
}

XT_REGISTER_OP(binary("Add", [](GradContext& g) {
  const TensorId& gy = g.gradOut(0);
  if (g.needsGrad(0)) g.setGradIn(0, g.reduceToShape(gy, g.inputInfo(0).shape()));
  if (g.needsGrad(1)) g.setGradIn(1, g.reduceToShape(gy, g.inputInfo(1).shape()));
}));

XT_REGISTER_OP(binary("Sub", [](GradContext& g) {
  const TensorId& gy = g.gradOut(0);
  if (g.needsGrad(0)) g.setGradIn(0, g.reduceToShape(gy, g.inputInfo(0).shape()));
  if (g.needsGrad(1)) {
    TensorId neg = g.emit("Neg", {gy}, {}, kOnnxDomain);
    g.setGradIn(1, g.reduceToShape(neg, g.inputInfo(1).shape()));
  }
}));

// The gradient of a mixed FLOAT16 x FLOAT-scalar Mul is FLOAT16 until the FLOAT input's is cast
// back to FLOAT.
XT_REGISTER_OP(binary("Mul", [](GradContext& g) {
  const TensorId& gy = g.gradOut(0);
  for (size_t k = 0; k < 2; ++k) {
    if (!g.needsGrad(k)) continue;
    TensorId p = g.emit("Mul", {gy, g.input(1 - k)}, {}, kOnnxDomain);
    p = g.reduceToShape(p, g.inputInfo(k).shape());
    if (g.inputInfo(k).dataType() != g.outputInfo(0).dataType()) {
      Attributes c;
      c.set("to", static_cast<int64_t>(dataTypeToOnnx(g.inputInfo(k).dataType())));
      p = g.emit("Cast", {p}, c, kOnnxDomain);
    }
    g.setGradIn(k, p);
  }
}));

// y = a / b: da = gy / b; db = -gy * y / b.
XT_REGISTER_OP(binary("Div", [](GradContext& g) {
  const TensorId& gy = g.gradOut(0);
  TensorId gyOverB = g.emit("Div", {gy, g.input(1)}, {}, kOnnxDomain);
  if (g.needsGrad(0)) g.setGradIn(0, g.reduceToShape(gyOverB, g.inputInfo(0).shape()));
  if (g.needsGrad(1)) {
    TensorId t = g.emit("Mul", {gyOverB, g.output(0)}, {}, kOnnxDomain);
    TensorId neg = g.emit("Neg", {t}, {}, kOnnxDomain);
    g.setGradIn(1, g.reduceToShape(neg, g.inputInfo(1).shape()));
  }
}));

XT_REGISTER_OP([] {
  OpDef d{.type = "Sum", .minInputs = 1, .maxInputs = -1};
  d.infer = [](const ShapeContext& ctx) {
    TensorInfo out = ctx.input(0);
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      const TensorInfo& in = ctx.input(i);
      if (in.dataType() != out.dataType()) {
        ctx.fail("input {} is {} but input 0 is {}", i, in.toString(), out.toString());
      }
      out = TensorInfo(out.dataType(), broadcastShapes(ctx, out.shape(), in.shape()));
    }
    return std::vector<TensorInfo>{out};
  };
  d.grad = [](GradContext& g) {
    if (!isFloatingPoint(g.outputInfo(0).dataType())) return;
    for (size_t i = 0; i < g.op().inputs.size(); ++i) {
      if (g.needsGrad(i)) g.setGradIn(i, g.reduceToShape(g.gradOut(0), g.inputInfo(i).shape()));
    }
  };
  return d;
}());

// ReduceSumToShape(x) with attribute shape: sums x over the dimensions that numpy broadcasting
// added or stretched, giving `shape`. Its gradient broadcasts back (Expand).
XT_REGISTER_OP([] {
  OpDef d{.type = "ReduceSumToShape", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    Shape target = ctx.attrs().getInts("shape");
    if (broadcastShapes(ctx, target, in.shape()) != in.shape()) {
      ctx.fail("shape {} does not broadcast to the input shape {}", shapeToString(target),
               shapeToString(in.shape()));
    }
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), target)};
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("shape", g.inputInfo(0).shape());
    g.setGradIn(0, g.emit("BroadcastToShape", {g.gradOut(0)}, a));
  };
  return d;
}());

// BroadcastToShape(x) with attribute shape: numpy-broadcasts x to `shape` (ONNX Expand with a
// static shape).
XT_REGISTER_OP([] {
  OpDef d{.type = "BroadcastToShape", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    Shape target = ctx.attrs().getInts("shape");
    if (broadcastShapes(ctx, in.shape(), target) != target) {
      ctx.fail("input shape {} does not broadcast to {}", shapeToString(in.shape()),
               shapeToString(target));
    }
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), target)};
  };
  d.grad = [](GradContext& g) {
    g.setGradIn(0, g.reduceToShape(g.gradOut(0), g.inputInfo(0).shape()));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
