// Kernels of src/ir/ops/lrn_ops.cpp (FLOAT; FLOAT16 runs promoted). X is [N, C, S] with S the
// product of the spatial dimensions: a channel's elements are S apart, so every loop runs over
// the S contiguous elements of one (n, c) plane, which the compiler vectorises. The window sums of
// squares go into a scratch the kernel owns; the batch items are split over the kernel threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

struct LrnParams {
  int64_t n = 0, c = 0, s = 0;
  int64_t before = 0, after = 0;        // the window of channel c: [c - before, c + after]
  float scale = 0, beta = 0, bias = 0;  // scale = alpha / size
};

LrnParams lrnParams(const KernelSpec& spec) {
  spec.requireFloatInputs();
  const Shape& shape = spec.inputs.at(0).shape();
  LrnParams p;
  const int64_t size = spec.attrs.getInt("size");
  if (shape.size() < 3 || size < 1) {
    spec.fail("expected an input of rank >= 3 and size >= 1, got {} and size {}",
              spec.inputs[0].toString(), size);
  }
  p.n = shape[0];
  p.c = shape[1];
  p.s = 1;
  for (size_t i = 2; i < shape.size(); ++i) p.s *= shape[i];
  p.before = (size - 1) / 2;
  p.after = size - 1 - p.before;
  p.scale = spec.attrs.getFloat("alpha", 1e-4f) / static_cast<float>(size);
  p.beta = spec.attrs.getFloat("beta", 0.75f);
  p.bias = spec.attrs.getFloat("bias", 1.0f);
  return p;
}

// den[c, :] = bias + scale * sum of x[j, :]^2 over channel c's window, for one batch item.
void windowSums(const LrnParams& p, const float* x, float* den) {
  for (int64_t c = 0; c < p.c; ++c) {
    float* __restrict d = den + c * p.s;
    for (int64_t k = 0; k < p.s; ++k) d[k] = 0.0f;
    const int64_t lo = std::max<int64_t>(0, c - p.before);
    const int64_t hi = std::min<int64_t>(p.c - 1, c + p.after);
    for (int64_t j = lo; j <= hi; ++j) {
      const float* __restrict xj = x + j * p.s;
      for (int64_t k = 0; k < p.s; ++k) d[k] += xj[k] * xj[k];
    }
    for (int64_t k = 0; k < p.s; ++k) d[k] = p.bias + p.scale * d[k];
  }
}

// The per-item scratch of a kernel: one [C, S] buffer per item, so items can run in parallel.
class LrnKernel final : public Kernel {
 public:
  LrnKernel(const KernelSpec& spec, bool grad)
      : p_(lrnParams(spec)),
        grad_(grad),
        scratch_(static_cast<size_t>(p_.n * p_.c * p_.s * (grad ? 2 : 1))) {}

  void run(const KernelIO& io) override {
    const int64_t item = p_.c * p_.s;
    forChunks(
        p_.n,
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            if (grad_) {
              backward(io.in(0).data<float>() + i * item, io.in(1).data<float>() + i * item,
                       io.out(0).data<float>() + i * item, scratch_.data() + 2 * i * item);
            } else {
              forward(io.in(0).data<float>() + i * item, io.out(0).data<float>() + i * item,
                      scratch_.data() + i * item);
            }
          }
        },
        1);
  }

 private:
  void forward(const float* x, float* y, float* den) const {
    windowSums(p_, x, den);
    const int64_t m = p_.c * p_.s;
    for (int64_t k = 0; k < m; ++k) y[k] = x[k] * std::pow(den[k], -p_.beta);
  }

  // t = gy x den^(-beta-1); gx = gy den^-beta - 2 scale beta x (sum of t over the channels whose
  // window holds this one: [c - after, c + before]).
  void backward(const float* gy, const float* x, float* gx, float* scratch) const {
    const int64_t m = p_.c * p_.s;
    float* den = scratch;
    float* t = scratch + m;
    windowSums(p_, x, den);
    for (int64_t k = 0; k < m; ++k) {
      const float pw = std::pow(den[k], -p_.beta);
      t[k] = gy[k] * x[k] * pw / den[k];
      gx[k] = gy[k] * pw;
    }
    const float f = 2.0f * p_.scale * p_.beta;
    for (int64_t c = 0; c < p_.c; ++c) {
      const int64_t lo = std::max<int64_t>(0, c - p_.after);
      const int64_t hi = std::min<int64_t>(p_.c - 1, c + p_.before);
      float* __restrict g = gx + c * p_.s;
      const float* __restrict xc = x + c * p_.s;
      for (int64_t j = lo; j <= hi; ++j) {
        const float* __restrict tj = t + j * p_.s;
        for (int64_t k = 0; k < p_.s; ++k) g[k] -= f * xc[k] * tj[k];
      }
    }
  }

  LrnParams p_;
  bool grad_;
  std::vector<float> scratch_;
};

XT_REGISTER_KERNEL("ai.onnx", "LRN", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  return std::make_unique<LrnKernel>(spec, false);
});
XT_REGISTER_KERNEL("ai.xtrain", "LRNGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  return std::make_unique<LrnKernel>(spec, true);
});

}  // namespace
}  // namespace xtrain::device
