// Kernels of src/ir/ops/math_unary_ops.cpp: the inverse and hyperbolic trigonometric functions,
// Tan, Expm1, Log1p and Shrink, their grad ops, and IsNaN and IsInf (FLOAT; FLOAT16 runs promoted).
// The functions are libm's (correctly rounded or within an ulp or two: these ops are rare in
// training graphs, so accuracy wins over a vectorised approximation); the loops are split over the
// kernel threads.
#include <cmath>

#include "device/kernel.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

template <typename F>
KernelFactory mathUnary(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    return makeKernel([f](const KernelIO& io) { mapFloat(io, f); });
  };
}

// (gy, z) -> gx.
template <typename F>
KernelFactory mathGrad(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    return makeKernel([f](const KernelIO& io) { mapFloatGrad(io, f); });
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Asin", mathUnary([](float x) { return std::asin(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Acos", mathUnary([](float x) { return std::acos(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Atan", mathUnary([](float x) { return std::atan(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Sinh", mathUnary([](float x) { return std::sinh(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Cosh", mathUnary([](float x) { return std::cosh(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Tan", mathUnary([](float x) { return std::tan(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Asinh", mathUnary([](float x) { return std::asinh(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Acosh", mathUnary([](float x) { return std::acosh(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Atanh", mathUnary([](float x) { return std::atanh(x); }));
XT_REGISTER_KERNEL("ai.graphcore", "Expm1", mathUnary([](float x) { return std::expm1(x); }));
XT_REGISTER_KERNEL("ai.graphcore", "Log1p", mathUnary([](float x) { return std::log1p(x); }));

// 1 - x^2 as (1 - x)(1 + x): exact near |x| = 1, where the derivatives of Asin, Acos and Atanh
// grow fastest.
float oneMinusSquare(float x) {
  return (1.0f - x) * (1.0f + x);
}

XT_REGISTER_KERNEL("ai.xtrain", "AsinGrad",
                   mathGrad([](float gy, float x) { return gy / std::sqrt(oneMinusSquare(x)); }));
XT_REGISTER_KERNEL("ai.xtrain", "AcosGrad",
                   mathGrad([](float gy, float x) { return -gy / std::sqrt(oneMinusSquare(x)); }));
XT_REGISTER_KERNEL("ai.xtrain", "AtanGrad",
                   mathGrad([](float gy, float x) { return gy / (1.0f + x * x); }));
XT_REGISTER_KERNEL("ai.xtrain", "SinhGrad",
                   mathGrad([](float gy, float x) { return gy * std::cosh(x); }));
XT_REGISTER_KERNEL("ai.xtrain", "CoshGrad",
                   mathGrad([](float gy, float x) { return gy * std::sinh(x); }));
// From the output y = tan(x).
XT_REGISTER_KERNEL("ai.xtrain", "TanGrad",
                   mathGrad([](float gy, float y) { return gy * (1.0f + y * y); }));
XT_REGISTER_KERNEL("ai.xtrain", "AsinhGrad",
                   mathGrad([](float gy, float x) { return gy / std::sqrt(x * x + 1.0f); }));
// sqrt(x-1) sqrt(x+1) rather than sqrt(x^2-1): no cancellation near x = 1.
XT_REGISTER_KERNEL("ai.xtrain", "AcoshGrad", mathGrad([](float gy, float x) {
                     return gy / (std::sqrt(x - 1.0f) * std::sqrt(x + 1.0f));
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "AtanhGrad",
                   mathGrad([](float gy, float x) { return gy / oneMinusSquare(x); }));
// From the output y = exp(x) - 1.
XT_REGISTER_KERNEL("ai.xtrain", "Expm1Grad",
                   mathGrad([](float gy, float y) { return gy * (y + 1.0f); }));
XT_REGISTER_KERNEL("ai.xtrain", "Log1pGrad",
                   mathGrad([](float gy, float x) { return gy / (1.0f + x); }));

XT_REGISTER_KERNEL("ai.onnx", "Shrink", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  const float lambd = spec.attrs.getFloat("lambd", 0.5f);
  const float bias = spec.attrs.getFloat("bias", 0.0f);
  return makeKernel([lambd, bias](const KernelIO& io) {
    mapFloat(io, [lambd, bias](float x) {
      return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0f);
    });
  });
});

// gy (1 + sign(|x| - lambd)) / 2: gy outside [-lambd, lambd], gy/2 on its edges, 0 inside.
XT_REGISTER_KERNEL("ai.xtrain", "ShrinkGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     const float lambd = spec.attrs.getFloat("lambd", 0.5f);
                     return makeKernel([lambd](const KernelIO& io) {
                       mapFloatGrad(io, [lambd](float gy, float x) {
                         const float d = std::fabs(x) - lambd;
                         return d > 0.0f ? gy : (d < 0.0f ? 0.0f : 0.5f * gy);
                       });
                     });
                   });

// IsNaN / IsInf: FLOAT in (FLOAT16 runs promoted; the conversion keeps NaN and inf), BOOL out.
template <typename F>
KernelFactory classify(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    const bool neg = spec.attrs.getInt("detect_negative", 1) != 0;
    const bool pos = spec.attrs.getInt("detect_positive", 1) != 0;
    return makeKernel([f, neg, pos](const KernelIO& io) {
      const float* __restrict x = io.in(0).data<float>();
      uint8_t* __restrict y = elems<uint8_t>(io.out(0));
      const int64_t n = io.in(0).nelms();
      for (int64_t i = 0; i < n; ++i) y[i] = f(x[i], neg, pos) ? 1 : 0;
    });
  };
}

XT_REGISTER_KERNEL("ai.onnx", "IsNaN",
                   classify([](float x, bool, bool) { return std::isnan(x); }));
XT_REGISTER_KERNEL("ai.onnx", "IsInf", classify([](float x, bool neg, bool pos) {
                     return std::isinf(x) && (x < 0.0f ? neg : pos);
                   }));

}  // namespace
}  // namespace xtrain::device
