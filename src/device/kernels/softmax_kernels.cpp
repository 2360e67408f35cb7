// Kernels for Softmax, LogSoftmax and their grads SoftmaxGrad, LogSoftmaxGrad (FLOAT). Softmax,
// LogSoftmaxGrad and SoftmaxGrad along an axis with later dimensions run on oneDNN's softmax_v2
// primitives (vectorised and threaded over rows; each row is normalised by one thread, so results
// do not depend on the thread count); SoftmaxGrad along the last axis on a loop of ours (below).
// LogSoftmax does not: oneDNN's log is off by up to ~1.5e-6 absolute (log(1) = 1.4e-6), which
// matters where log probabilities are near 0, so it keeps a plain loop with libm's log.
//
// The input is viewed as [outer, n, inner] and normalised along n: with coerce_2d = 0, n is
// dims[axis] and inner the product of the later dimensions; with coerce_2d = 1 (opset < 13), n is
// the product of dims[axis:] and inner = 1. The primitive is built once per op on that view
// ([outer, n] when inner is 1). Forward: the maximum is subtracted before exponentiating.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"
#include "device/kernels/parallel_elements.hpp"

namespace xtrain::device {
namespace {

enum class Mode { Softmax, LogSoftmax, SoftmaxGrad, LogSoftmaxGrad };

struct Layout {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

Layout layoutOf(const KernelSpec& spec, const Shape& shape) {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t axis = spec.attrs.getInt("axis");
  const bool coerce = spec.attrs.getInt("coerce_2d") != 0;
  const int64_t k = axis < 0 ? axis + rank : axis;
  if (k < 0 || k >= std::max<int64_t>(rank, 1)) {
    spec.fail("axis {} is out of range for rank {}", axis, rank);
  }
  Layout l;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = shape[static_cast<size_t>(i)];
    if (i < k) {
      l.outer *= d;
    } else if (i == k || coerce) {
      l.n *= d;
    } else {
      l.inner *= d;
    }
  }
  return l;
}

// Forward: in(0) = x, out(0) = y. Grad: in(0) = gy, in(1) = y (the forward's output), out(0) = gx.
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const KernelSpec& spec, Mode mode, const Layout& l)
      : grad_(mode == Mode::SoftmaxGrad || mode == Mode::LogSoftmaxGrad),
        empty_(l.outer * l.n * l.inner == 0) {
    if (empty_) return;
    md_ = dnnl_util::plainDesc(l.inner == 1 ? Shape{l.outer, l.n} : Shape{l.outer, l.n, l.inner});
    const auto alg = mode == Mode::Softmax || mode == Mode::SoftmaxGrad
                         ? dnnl::algorithm::softmax_accurate
                         : dnnl::algorithm::softmax_log;
    const dnnl::primitive_attr attr = dnnl_util::userScratchpadAttr();
    prim_ = dnnl_util::create(spec, "softmax", [&] {
      const dnnl::softmax_v2_forward::primitive_desc fwd(
          dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_training, alg, md_, md_, 1), attr,
          dnnl_util::engine());
      if (!grad_) return dnnl_util::makePrimitive<dnnl::softmax_v2_forward>(fwd);
      return dnnl_util::makePrimitive<dnnl::softmax_v2_backward>(
          dnnl::softmax_v2_backward::primitive_desc(
              dnnl::softmax_v2_backward::desc(alg, md_, md_, md_, 1), attr, dnnl_util::engine(),
              fwd));
    });
  }

  void run(const KernelIO& io) override {
    if (empty_) return;
    const size_t bytes = prim_.scratchpadBytes();
    std::byte* scratch = bytes > 0 ? dnnl_util::threadScratch(bytes) : nullptr;
    const auto mem = [&](const HostTensor& t) { return dnnl_util::wrap(md_, t.raw()); };
    if (grad_) {
      dnnl_util::execute(prim_,
                         {{DNNL_ARG_DIFF_DST, mem(io.in(0))},
                          {DNNL_ARG_DST, mem(io.in(1))},
                          {DNNL_ARG_DIFF_SRC, mem(io.out(0))}},
                         scratch);
    } else {
      dnnl_util::execute(prim_, {{DNNL_ARG_SRC, mem(io.in(0))}, {DNNL_ARG_DST, mem(io.out(0))}},
                         scratch);
    }
  }

 private:
  bool grad_;
  bool empty_;
  dnnl::memory::desc md_;
  dnnl_util::Primitive prim_;
};

// LogSoftmax forward: y = x - max - log(sum(exp(x - max))) along n; rows (inner == 1) in place,
// otherwise the n slices of inner contiguous elements combined lane by lane in scratch rows.
class LogSoftmaxKernel final : public Kernel {
 public:
  explicit LogSoftmaxKernel(const Layout& l)
      : l_(l), m_(static_cast<size_t>(l.inner)), s_(static_cast<size_t>(l.inner)) {}

  void run(const KernelIO& io) override {
    const float* x = io.in(0).data<float>();
    float* y = io.out(0).data<float>();
    const int64_t n = l_.n, w = l_.inner, block = n * w;
    if (block == 0) return;
    float* m = m_.data();
    double* s = s_.data();
    for (int64_t o = 0; o < l_.outer; ++o) {
      const float* p = x + o * block;
      float* out = y + o * block;
      std::copy(p, p + w, m);
      for (int64_t j = 1; j < n; ++j) {
        for (int64_t k = 0; k < w; ++k) m[k] = std::max(m[k], p[j * w + k]);
      }
      std::fill(s, s + w, 0.0);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t k = 0; k < w; ++k) s[k] += std::exp(p[j * w + k] - m[k]);
      }
      for (int64_t k = 0; k < w; ++k) s[k] = std::log(s[k]);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t k = 0; k < w; ++k) {
          out[j * w + k] = (p[j * w + k] - m[k]) - static_cast<float>(s[k]);
        }
      }
    }
  }

 private:
  Layout l_;
  std::vector<float> m_;   // running maximum, one per inner lane
  std::vector<double> s_;  // sum of exponentials, then its log
};

// SoftmaxGrad over rows (inner == 1): gx = y * (gy - sum(gy * y)) along each row. oneDNN 2.6 has
// no jit softmax backward for AVX2 machines (its reference kernel took 5% of ViT-S/16's step, 7x
// the forward); this is two vectorisable passes per row, rows split over the kernel threads. Each
// row is summed in a fixed order (8 lanes, then the lanes), so results do not depend on the
// thread count.
class SoftmaxGradRowsKernel final : public Kernel {
 public:
  explicit SoftmaxGradRowsKernel(const Layout& l) : rows_(l.outer), n_(l.n) {}

  void run(const KernelIO& io) override {
    const float* gy = io.in(0).data<float>();
    const float* y = io.in(1).data<float>();
    float* gx = io.out(0).data<float>();
    const int64_t n = n_;
    if (n == 0) return;
    const int64_t grain = std::max<int64_t>(1, kParallelChunk / n);
    forEachChunk(
        rows_,
        [&](int64_t, int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) row(gy + r * n, y + r * n, gx + r * n, n);
        },
        grain);
  }

 private:
  static void row(const float* __restrict gy, const float* __restrict y, float* __restrict gx,
                  int64_t n) {
    constexpr int64_t kLanes = 8;
    float lanes[kLanes] = {};
    const int64_t whole = n - n % kLanes;
    for (int64_t j = 0; j < whole; j += kLanes) {
      for (int64_t k = 0; k < kLanes; ++k) lanes[k] += gy[j + k] * y[j + k];
    }
    float dot = 0.0f;
    for (int64_t k = 0; k < kLanes; ++k) dot += lanes[k];
    for (int64_t j = whole; j < n; ++j) dot += gy[j] * y[j];
    for (int64_t j = 0; j < n; ++j) gx[j] = y[j] * (gy[j] - dot);
  }

  int64_t rows_, n_;
};

KernelFactory softmaxFactory(Mode mode) {
  return [mode](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      if (spec.inputs[i].dataType() != DataType::FLOAT) {
        spec.fail("input {} is {}, expected FLOAT (the only element type this kernel supports)", i,
                  spec.inputs[i].toString());
      }
    }
    const Layout l = layoutOf(spec, spec.inputs.at(0).shape());
    if (mode == Mode::LogSoftmax) return std::make_unique<LogSoftmaxKernel>(l);
    if (mode == Mode::SoftmaxGrad && l.inner == 1)
      return std::make_unique<SoftmaxGradRowsKernel>(l);
    return std::make_unique<SoftmaxKernel>(spec, mode, l);
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Softmax", softmaxFactory(Mode::Softmax));
XT_REGISTER_KERNEL("ai.onnx", "LogSoftmax", softmaxFactory(Mode::LogSoftmax));
XT_REGISTER_KERNEL("ai.xtrain", "SoftmaxGrad", softmaxFactory(Mode::SoftmaxGrad));
XT_REGISTER_KERNEL("ai.xtrain", "LogSoftmaxGrad", softmaxFactory(Mode::LogSoftmaxGrad));

}  // namespace
}  // namespace xtrain::device
