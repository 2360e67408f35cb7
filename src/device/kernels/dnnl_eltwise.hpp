// Elementwise kernels on oneDNN's eltwise primitives (GELU, Tanh, ...): forward y = f(x) and
// backward gx = gy * f'(.) of x (the source) or of y (the destination, the *_use_dst_for_bwd
// algorithms).
//
// Why: oneDNN's JIT code evaluates tanh, erf, exp at the machine's full vector width (AVX-512
// here; this library is compiled for SSE2) and splits the elements over the kernel threads. Each
// element is computed by the same instructions whatever the split, so results do not depend on the
// thread count (tests/ops/gelu_fusion_test.cpp checks it). Tensors are viewed as one dimension:
// the functions are elementwise, so shape and rank (0-d scalars too) do not matter. FLOAT only.
#pragma once

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

#include "device/kernel.hpp"

#pragma GCC visibility push(default)

namespace xtrain::device::dnnl_util {

// y = f(x) for input 0 and output 0.
std::unique_ptr<Kernel> eltwiseForward(const KernelSpec& spec, dnnl::algorithm alg,
                                       float alpha = 0.0f, float beta = 0.0f);
// gx = gy * f'(z) for inputs (gy, z) and output gx; z is x, or y for a *_use_dst_for_bwd `alg`.
std::unique_ptr<Kernel> eltwiseBackward(const KernelSpec& spec, dnnl::algorithm alg,
                                        float alpha = 0.0f, float beta = 0.0f);

}  // namespace xtrain::device::dnnl_util

#pragma GCC visibility pop
