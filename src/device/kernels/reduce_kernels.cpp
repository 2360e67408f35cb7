// Kernels of ReduceSum (FLOAT, INT32, INT64) and ReduceMean (FLOAT). The IR gives the reduced axes
// as a sorted explicit list. FLOAT accumulates in double, integers in int64.
//
// The factory drops size-1 dimensions and merges neighbouring dimensions that are both reduced or
// both kept, so every reduction becomes a loop over rows of the innermost merged dimension: either
// a reduced row (summed into one output element) or a kept row (added elementwise into a row of the
// accumulator).
#include <algorithm>
#include <cstring>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

template <typename T, typename Acc>
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(const Shape& inShape, const std::vector<int64_t>& axes, int64_t outN, bool mean)
      : outN_(outN) {
    std::vector<bool> reduced(inShape.size(), false);
    for (int64_t a : axes) reduced.at(static_cast<size_t>(a)) = true;
    int64_t count = 1;  // elements summed into each output element
    std::vector<bool> groupReduced;
    for (size_t k = 0; k < inShape.size(); ++k) {
      if (reduced[k]) count *= inShape[k];
      if (inShape[k] == 1) continue;
      if (!dims_.empty() && groupReduced.back() == reduced[k]) {
        dims_.back() *= inShape[k];
      } else {
        dims_.push_back(inShape[k]);
        groupReduced.push_back(reduced[k]);
      }
    }
    inN_ = 1;
    for (int64_t d : dims_) inN_ *= d;
    outStrides_.assign(dims_.size(), 0);
    int64_t s = 1;
    for (size_t k = dims_.size(); k-- > 0;) {
      if (!groupReduced[k]) {
        outStrides_[k] = s;
        s *= dims_[k];
      }
    }
    // Mean of an empty set: 0 * inf gives NaN, as numpy does.
    scale_ = mean ? 1.0 / static_cast<double>(count) : 1.0;
    mean_ = mean;
    acc_.resize(static_cast<size_t>(outN_));
    idx_.resize(dims_.size());
  }

  void run(const KernelIO& io) override {
    const T* x = io.in(0).template data<T>();
    T* y = io.out(0).template data<T>();
    std::fill(acc_.begin(), acc_.end(), Acc{0});
    if (inN_ > 0 && dims_.empty()) {
      acc_[0] = static_cast<Acc>(x[0]);  // a single element
    } else if (inN_ > 0) {
      accumulate(x);
    }
    for (int64_t i = 0; i < outN_; ++i) {
      const auto u = static_cast<size_t>(i);
      if (mean_) {
        y[i] = static_cast<T>(static_cast<double>(acc_[u]) * scale_);
      } else {
        y[i] = static_cast<T>(acc_[u]);
      }
    }
  }

 private:
  // Sums a contiguous row with four partial sums (independent chains, so the adds pipeline).
  static Acc sumRow(const T* x, int64_t n) {
    Acc s0{0}, s1{0}, s2{0}, s3{0};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      s0 += static_cast<Acc>(x[j]);
      s1 += static_cast<Acc>(x[j + 1]);
      s2 += static_cast<Acc>(x[j + 2]);
      s3 += static_cast<Acc>(x[j + 3]);
    }
    for (; j < n; ++j) s0 += static_cast<Acc>(x[j]);
    return (s0 + s1) + (s2 + s3);
  }

  void accumulate(const T* x) {
    const size_t rank = dims_.size();
    const int64_t inner = dims_[rank - 1];
    const bool innerReduced = outStrides_[rank - 1] == 0;
    Acc* acc = acc_.data();
    std::fill(idx_.begin(), idx_.end(), 0);
    int64_t out = 0;
    for (int64_t base = 0; base < inN_; base += inner) {
      if (innerReduced) {
        acc[out] += sumRow(x + base, inner);
      } else {
        Acc* a = acc + out;
        const T* row = x + base;
        for (int64_t j = 0; j < inner; ++j) a[j] += static_cast<Acc>(row[j]);
      }
      // Advance the index over the outer dimensions.
      for (size_t d = rank - 1; d-- > 0;) {
        ++idx_[d];
        out += outStrides_[d];
        if (idx_[d] < dims_[d]) break;
        out -= outStrides_[d] * dims_[d];
        idx_[d] = 0;
      }
    }
  }

  int64_t outN_;
  int64_t inN_ = 1;
  double scale_ = 1.0;
  bool mean_ = false;
  std::vector<int64_t> dims_;        // merged input dimensions
  std::vector<int64_t> outStrides_;  // per merged dimension: stride in the output, 0 when reduced
  std::vector<Acc> acc_;
  std::vector<int64_t> idx_;
};

KernelFactory reduceFactory(bool mean) {
  return [mean](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const TensorInfo& in = spec.inputs.at(0);
    const std::vector<int64_t>& axes = spec.attrs.getInts("axes");
    for (int64_t a : axes) {
      if (a < 0 || a >= in.rank())
        spec.fail("axis {} is out of range for the input {}", a, in.toString());
    }
    const int64_t outN = spec.outputs.at(0).nelms();
    switch (in.dataType()) {
      case DataType::FLOAT:
        return std::make_unique<ReduceKernel<float, double>>(in.shape(), axes, outN, mean);
      case DataType::INT32:
        if (!mean)
          return std::make_unique<ReduceKernel<int32_t, int64_t>>(in.shape(), axes, outN, false);
        break;
      case DataType::INT64:
        if (!mean)
          return std::make_unique<ReduceKernel<int64_t, int64_t>>(in.shape(), axes, outN, false);
        break;
      default: break;
    }
    spec.fail("element type of {} is not supported ({})", in.toString(),
              mean ? "FLOAT" : "FLOAT, INT32, INT64");
  };
}

XT_REGISTER_KERNEL("ai.onnx", "ReduceSum", reduceFactory(false));
XT_REGISTER_KERNEL("ai.onnx", "ReduceMean", reduceFactory(true));

}  // namespace
}  // namespace xtrain::device
