// Kernels of src/ir/ops/activation_rounding_ops.cpp: ai.graphcore Swish, NearbyInt and
// IncrementMod, and ai.xtrain SwishGrad (Swish and SwishGrad on oneDNN; GeluErf shares
// gelu_kernels.cpp's oneDNN kernel). FLOAT
// (FLOAT16 runs promoted); IncrementMod also INT32 and UINT32.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_eltwise.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

// Swish (x sigmoid(x)) and its gradient gy s (1 + x (1 - s)) on oneDNN's eltwise swish with
// alpha 1 (dnnl_eltwise.hpp: full vector width, results independent of the thread count). The
// fusion pass turns torch.onnx's SiLU (Mul(x, Sigmoid(x))) into Swish (src/ir/fusion).
XT_REGISTER_KERNEL("ai.graphcore", "Swish", [](const KernelSpec& spec) {
  return dnnl_util::eltwiseForward(spec, dnnl::algorithm::eltwise_swish, 1.0f);
});

XT_REGISTER_KERNEL("ai.xtrain", "SwishGrad", [](const KernelSpec& spec) {
  return dnnl_util::eltwiseBackward(spec, dnnl::algorithm::eltwise_swish, 1.0f);
});

// std::nearbyint in the default rounding mode: halves to even.
XT_REGISTER_KERNEL("ai.graphcore", "NearbyInt",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     return makeKernel([](const KernelIO& io) {
                       mapFloat(io, [](float x) { return std::nearbyint(x); });
                     });
                   });

// (x + increment) % modulus in T; the attributes are whole numbers for integer T (the op's
// inference checks it), converted through int64 so that a negative increment wraps on UINT32.
template <typename T>
std::unique_ptr<Kernel> incrementModInteger(const KernelSpec& spec) {
  const T inc = static_cast<T>(static_cast<int64_t>(spec.attrs.getFloat("increment")));
  const T mod = static_cast<T>(static_cast<int64_t>(spec.attrs.getFloat("modulus")));
  return makeKernel([inc, mod](const KernelIO& io) {
    const T* x = io.in(0).data<T>();
    T* y = io.out(0).data<T>();
    const int64_t n = io.out(0).nelms();
    using U = std::make_unsigned_t<T>;
    for (int64_t i = 0; i < n; ++i) {
      // The sum in unsigned arithmetic, so INT32 wraps instead of overflowing; the remainder in
      // int64, where INT32_MIN % -1 is defined.
      const T sum = static_cast<T>(static_cast<U>(x[i]) + static_cast<U>(inc));
      y[i] = static_cast<T>(static_cast<int64_t>(sum) % static_cast<int64_t>(mod));
    }
  });
}

XT_REGISTER_KERNEL("ai.graphcore", "IncrementMod",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     switch (spec.inputs.at(0).dataType()) {
                       case DataType::INT32: return incrementModInteger<int32_t>(spec);
                       case DataType::UINT32: return incrementModInteger<uint32_t>(spec);
                       default: break;
                     }
                     spec.requireFloatInputs();
                     const float inc = spec.attrs.getFloat("increment");
                     const float mod = spec.attrs.getFloat("modulus");
                     return makeKernel([inc, mod](const KernelIO& io) {
                       mapFloat(io, [inc, mod](float x) { return std::fmod(x + inc, mod); });
                     });
                   });

}  // namespace
}  // namespace xtrain::device
