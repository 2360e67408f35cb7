// Kernels for Softmax, LogSoftmax and their grads SoftmaxGrad, LogSoftmaxGrad (FLOAT).
//
// The input is viewed as [outer, n, inner] and normalised along n: with coerce_2d = 0, n is
// dims[axis] and inner the product of the later dimensions; with coerce_2d = 1 (opset < 13), n is
// the product of dims[axis:] and inner = 1. Rows (inner == 1) are reduced in place; otherwise the n
// slices of inner contiguous elements are combined lane by lane in a scratch row, so every loop
// runs over contiguous memory. Forward kernels subtract the maximum before exponentiating.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "device/kernel.hpp"

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

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(Mode mode, const Layout& layout)
      : mode_(mode),
        l_(layout),
        a_(static_cast<size_t>(layout.inner > 1 ? layout.inner : 0)),
        b_(a_.size()) {}

  void run(const KernelIO& io) override {
    const bool grad = mode_ == Mode::SoftmaxGrad || mode_ == Mode::LogSoftmaxGrad;
    // Forward: p = x. Grad: p = gy, q = y.
    const float* p = io.in(0).data<float>();
    const float* q = grad ? io.in(1).data<float>() : nullptr;
    float* out = io.out(0).data<float>();
    const int64_t block = l_.n * l_.inner;
    if (block == 0) return;
    for (int64_t o = 0; o < l_.outer; ++o) {
      const int64_t off = o * block;
      if (l_.inner == 1) {
        row(p + off, grad ? q + off : nullptr, out + off);
      } else {
        columns(p + off, grad ? q + off : nullptr, out + off);
      }
    }
  }

 private:
  void row(const float* __restrict p, const float* __restrict q, float* __restrict out) const {
    const int64_t n = l_.n;
    switch (mode_) {
      case Mode::Softmax: {
        const float m = *std::max_element(p, p + n);
        double s = 0;
        for (int64_t j = 0; j < n; ++j) {
          out[j] = std::exp(p[j] - m);
          s += out[j];
        }
        const auto inv = static_cast<float>(1.0 / s);
        for (int64_t j = 0; j < n; ++j) out[j] *= inv;
        return;
      }
      case Mode::LogSoftmax: {
        const float m = *std::max_element(p, p + n);
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += std::exp(p[j] - m);
        const auto logS = static_cast<float>(std::log(s));
        for (int64_t j = 0; j < n; ++j) out[j] = (p[j] - m) - logS;
        return;
      }
      case Mode::SoftmaxGrad: {
        double dot = 0;
        for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(p[j]) * q[j];
        const auto d = static_cast<float>(dot);
        for (int64_t j = 0; j < n; ++j) out[j] = q[j] * (p[j] - d);
        return;
      }
      case Mode::LogSoftmaxGrad: {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += p[j];
        const auto s = static_cast<float>(sum);
        for (int64_t j = 0; j < n; ++j) out[j] = p[j] - std::exp(q[j]) * s;
        return;
      }
    }
  }

  // The same along a strided axis: a_ and b_ hold one value per inner lane.
  void columns(const float* __restrict p, const float* __restrict q, float* __restrict out) {
    const int64_t n = l_.n;
    const int64_t w = l_.inner;
    float* __restrict a = a_.data();
    float* __restrict b = b_.data();
    switch (mode_) {
      case Mode::Softmax:
      case Mode::LogSoftmax: {
        std::copy(p, p + w, a);  // running max
        for (int64_t j = 1; j < n; ++j) {
          const float* pj = p + j * w;
          for (int64_t k = 0; k < w; ++k) a[k] = std::max(a[k], pj[k]);
        }
        std::fill(b, b + w, 0.0f);
        if (mode_ == Mode::Softmax) {
          for (int64_t j = 0; j < n; ++j) {
            const float* pj = p + j * w;
            float* oj = out + j * w;
            for (int64_t k = 0; k < w; ++k) {
              oj[k] = std::exp(pj[k] - a[k]);
              b[k] += oj[k];
            }
          }
          for (int64_t k = 0; k < w; ++k) b[k] = 1.0f / b[k];
          for (int64_t j = 0; j < n; ++j) {
            float* oj = out + j * w;
            for (int64_t k = 0; k < w; ++k) oj[k] *= b[k];
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            const float* pj = p + j * w;
            for (int64_t k = 0; k < w; ++k) b[k] += std::exp(pj[k] - a[k]);
          }
          for (int64_t k = 0; k < w; ++k) b[k] = std::log(b[k]);
          for (int64_t j = 0; j < n; ++j) {
            const float* pj = p + j * w;
            float* oj = out + j * w;
            for (int64_t k = 0; k < w; ++k) oj[k] = (pj[k] - a[k]) - b[k];
          }
        }
        return;
      }
      case Mode::SoftmaxGrad:
      case Mode::LogSoftmaxGrad: {
        const bool log = mode_ == Mode::LogSoftmaxGrad;
        std::fill(b, b + w, 0.0f);
        for (int64_t j = 0; j < n; ++j) {
          const float* pj = p + j * w;
          const float* qj = q + j * w;
          if (log) {
            for (int64_t k = 0; k < w; ++k) b[k] += pj[k];
          } else {
            for (int64_t k = 0; k < w; ++k) b[k] += pj[k] * qj[k];
          }
        }
        for (int64_t j = 0; j < n; ++j) {
          const float* pj = p + j * w;
          const float* qj = q + j * w;
          float* oj = out + j * w;
          if (log) {
            for (int64_t k = 0; k < w; ++k) oj[k] = pj[k] - std::exp(qj[k]) * b[k];
          } else {
            for (int64_t k = 0; k < w; ++k) oj[k] = qj[k] * (pj[k] - b[k]);
          }
        }
        return;
      }
    }
  }

  Mode mode_;
  Layout l_;
  std::vector<float> a_;  // scratch for the strided case, one value per inner lane
  std::vector<float> b_;
};

KernelFactory softmaxFactory(Mode mode) {
  return [mode](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      if (spec.inputs[i].dataType() != DataType::FLOAT) {
        spec.fail("input {} is {}, expected FLOAT (the only element type this kernel supports)", i,
                  spec.inputs[i].toString());
      }
    }
    return std::make_unique<SoftmaxKernel>(mode, layoutOf(spec, spec.inputs.at(0).shape()));
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Softmax", softmaxFactory(Mode::Softmax));
XT_REGISTER_KERNEL("ai.onnx", "LogSoftmax", softmaxFactory(Mode::LogSoftmax));
XT_REGISTER_KERNEL("ai.xtrain", "SoftmaxGrad", softmaxFactory(Mode::SoftmaxGrad));
XT_REGISTER_KERNEL("ai.xtrain", "LogSoftmaxGrad", softmaxFactory(Mode::LogSoftmaxGrad));

}  // namespace
}  // namespace xtrain::device
