// Kernels of src/ir/ops/atan2_ops.cpp: ai.graphcore Atan2 and its ai.xtrain Atan2Grad (FLOAT;
// FLOAT16 runs promoted), with numpy broadcasting.
#include <cmath>

#include "device/kernel.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

XT_REGISTER_KERNEL("ai.graphcore", "Atan2", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    broadcastBinary<float, float, float>(io.in(0), io.in(1), io.out(0),
                                         [](float y, float x) { return std::atan2(y, x); });
  });
});

// (gz, Y, X) -> gz X / r2 (wrt 0) or -gz Y / r2 (wrt 1), r2 = X^2 + Y^2, in gz's shape. At the
// origin r2 is 0 and the result is NaN or infinite, as PopART's is.
XT_REGISTER_KERNEL("ai.xtrain", "Atan2Grad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  const bool wrtX = spec.attrs.getInt("wrt") == 1;
  return makeKernel([wrtX](const KernelIO& io) {
    const HostTensor& gz = io.in(0);
    const float* pg = gz.data<float>();
    const float* py = io.in(1).data<float>();
    const float* px = io.in(2).data<float>();
    float* out = io.out(0).data<float>();
    const Shape& shape = gz.shape();
    forEachBroadcast3(shape, broadcastStrides(shape, shape),
                      broadcastStrides(io.in(1).shape(), shape),
                      broadcastStrides(io.in(2).shape(), shape),
                      [&](int64_t o, int64_t ig, int64_t iy, int64_t ix) {
                        const float y = py[iy], x = px[ix];
                        const float r2 = x * x + y * y;
                        out[o] = (wrtX ? -pg[ig] * y : pg[ig] * x) / r2;
                      });
  });
});

}  // namespace
}  // namespace xtrain::device
