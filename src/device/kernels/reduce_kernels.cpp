// Kernels of ReduceSum (FLOAT, INT32, INT64) and ReduceMean (FLOAT), ReduceMax/ReduceMin (FLOAT,
// INT32, INT64, and INT8/UINT8 as opset 12 added), ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp, ReduceSumSquare (FLOAT) and their gradient ReduceGrad (FLOAT). The IR gives the reduced axes as a
// sorted explicit list. FLOAT sums and products accumulate in double, integers in int64.
//
// The factory drops size-1 dimensions and merges neighbouring dimensions that are both reduced or
// both kept, so every reduction becomes a loop over rows of the innermost merged dimension: either
// a reduced row (summed into one output element) or a kept row (added elementwise into a row of the
// accumulator).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

// The shape of a reduction with size-1 dimensions dropped and neighbouring dimensions that are both
// reduced or both kept merged, walked row by row over the innermost merged dimension. A row is
// either reduced (all its elements go to one output element) or kept (element j goes to output
// element out + j).
class ReduceGeometry {
 public:
  ReduceGeometry(const Shape& inShape, const std::vector<int64_t>& axes) {
    std::vector<bool> reduced(inShape.size(), false);
    for (int64_t a : axes) reduced.at(static_cast<size_t>(a)) = true;
    std::vector<bool> groupReduced;
    for (size_t k = 0; k < inShape.size(); ++k) {
      if (reduced[k]) count_ *= inShape[k];
      if (!reduced[k]) outN_ *= inShape[k];
      if (inShape[k] == 1) continue;
      if (!dims_.empty() && groupReduced.back() == reduced[k]) {
        dims_.back() *= inShape[k];
      } else {
        dims_.push_back(inShape[k]);
        groupReduced.push_back(reduced[k]);
      }
    }
    if (dims_.empty()) {  // a single element
      dims_.push_back(1);
      groupReduced.push_back(true);
    }
    for (int64_t d : dims_) inN_ *= d;
    outStrides_.assign(dims_.size(), 0);
    int64_t s = 1;
    for (size_t k = dims_.size(); k-- > 0;) {
      if (!groupReduced[k]) {
        outStrides_[k] = s;
        s *= dims_[k];
      }
    }
    inner_ = dims_.back();
    innerReduced_ = groupReduced.back();
  }

  int64_t inN() const { return inN_; }
  int64_t outN() const { return outN_; }
  int64_t count() const { return count_; }  // elements reduced into each output element
  int64_t inner() const { return inner_; }
  bool innerReduced() const { return innerReduced_; }

  // Calls f(base, out) for each row: the row starts at input element `base`, and its first output
  // element is `out`.
  template <typename F>
  void forEachRow(F&& f) const {
    if (inN_ == 0) return;
    const size_t rank = dims_.size();
    std::vector<int64_t> idx(rank, 0);
    int64_t out = 0;
    for (int64_t base = 0; base < inN_; base += inner_) {
      f(base, out);
      for (size_t d = rank - 1; d-- > 0;) {
        ++idx[d];
        out += outStrides_[d];
        if (idx[d] < dims_[d]) break;
        out -= outStrides_[d] * dims_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> dims_;
  std::vector<int64_t> outStrides_;
  int64_t inN_ = 1, outN_ = 1, count_ = 1, inner_ = 1;
  bool innerReduced_ = true;
};

// A reduction as (accumulator type, identity, elementwise map, combine, finish). Rows are reduced
// with four independent accumulators so that the loop pipelines and vectorises.
template <typename T, typename Acc, typename Map, typename Combine, typename Finish>
class FoldKernel final : public Kernel {
 public:
  FoldKernel(ReduceGeometry geo, Acc identity, Map map, Combine combine, Finish finish)
      : geo_(std::move(geo)),
        identity_(identity),
        map_(map),
        combine_(combine),
        finish_(finish),
        acc_(static_cast<size_t>(geo_.outN())) {}

  void run(const KernelIO& io) override {
    const T* x = io.in(0).template data<T>();
    T* y = io.out(0).template data<T>();
    std::fill(acc_.begin(), acc_.end(), identity_);
    Acc* acc = acc_.data();
    const int64_t inner = geo_.inner();
    if (geo_.inN() == 1) {
      // A single element is its own reduction: map(x) (for a sum, -0 keeps its sign, which adding
      // it to the identity 0 would lose).
      acc[0] = map_(x[0]);
    } else if (geo_.innerReduced()) {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        acc[out] = combine_(acc[out], foldRow(x + base, inner));
      });
    } else {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const T* __restrict row = x + base;
        Acc* __restrict a = acc + out;
        for (int64_t j = 0; j < inner; ++j) a[j] = combine_(a[j], map_(row[j]));
      });
    }
    for (int64_t i = 0; i < geo_.outN(); ++i) y[i] = static_cast<T>(finish_(acc[i]));
  }

 private:
  Acc foldRow(const T* __restrict x, int64_t n) const {
    Acc a0 = identity_, a1 = identity_, a2 = identity_, a3 = identity_;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      a0 = combine_(a0, map_(x[j]));
      a1 = combine_(a1, map_(x[j + 1]));
      a2 = combine_(a2, map_(x[j + 2]));
      a3 = combine_(a3, map_(x[j + 3]));
    }
    for (; j < n; ++j) a0 = combine_(a0, map_(x[j]));
    return combine_(combine_(a0, a1), combine_(a2, a3));
  }

  ReduceGeometry geo_;
  Acc identity_;
  Map map_;
  Combine combine_;
  Finish finish_;
  std::vector<Acc> acc_;
};

template <typename T, typename Acc, typename Map, typename Combine, typename Finish>
std::unique_ptr<Kernel> makeFold(ReduceGeometry geo, Acc identity, Map map, Combine combine,
                                 Finish finish) {
  return std::make_unique<FoldKernel<T, Acc, Map, Combine, Finish>>(std::move(geo), identity, map,
                                                                    combine, finish);
}

// The extreme value of each reduced set and the input position of its first occurrence. Max and
// Min propagate NaN, as numpy and PyTorch do.
template <typename T, bool kMax>
void argExtreme(const ReduceGeometry& geo, const T* x, T* best, int64_t* at) {
  const T init = kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  std::fill(best, best + geo.outN(),
            std::numeric_limits<T>::has_infinity
                ? (kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity())
                : init);
  std::fill(at, at + geo.outN(), int64_t{-1});
  const int64_t inner = geo.inner();
  // A NaN beats every number (the forward propagates it), and the first NaN stays.
  auto better = [](T v, T b) { return (kMax ? v > b : v < b) || (v != v && b == b); };
  if (geo.innerReduced()) {
    geo.forEachRow([&](int64_t base, int64_t out) {
      const T* row = x + base;
      for (int64_t j = 0; j < inner; ++j) {
        if (better(row[j], best[out]) || at[out] < 0) {
          best[out] = row[j];
          at[out] = base + j;
        }
      }
    });
  } else {
    geo.forEachRow([&](int64_t base, int64_t out) {
      const T* row = x + base;
      for (int64_t j = 0; j < inner; ++j) {
        if (better(row[j], best[out + j]) || at[out + j] < 0) {
          best[out + j] = row[j];
          at[out + j] = base + j;
        }
      }
    });
  }
}

template <typename T, bool kMax>
std::unique_ptr<Kernel> makeExtreme(ReduceGeometry geo) {
  const T identity =
      std::numeric_limits<T>::has_infinity
          ? (kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity())
          : (kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
  auto id = [](T v) { return v; };
  auto finish = [](T v) { return v; };
  if constexpr (kMax) {
    return makeFold<T, T>(
        std::move(geo), identity, id, [](T a, T b) { return a > b || a != a ? a : b; }, finish);
  } else {
    return makeFold<T, T>(
        std::move(geo), identity, id, [](T a, T b) { return a < b || a != a ? a : b; }, finish);
  }
}

// ReduceLogSumExp: the maximum m of each set first, then m + log(sum exp(x - m)) (an infinite m is
// the result itself, -inf for an empty set).
class LogSumExpKernel final : public Kernel {
 public:
  explicit LogSumExpKernel(ReduceGeometry geo)
      : geo_(std::move(geo)),
        max_(static_cast<size_t>(geo_.outN())),
        sum_(static_cast<size_t>(geo_.outN())) {}

  void run(const KernelIO& io) override {
    const float* x = io.in(0).data<float>();
    float* y = io.out(0).data<float>();
    float* m = max_.data();
    double* s = sum_.data();
    const int64_t inner = geo_.inner();
    std::fill(max_.begin(), max_.end(), -std::numeric_limits<float>::infinity());
    std::fill(sum_.begin(), sum_.end(), 0.0);
    if (geo_.innerReduced()) {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* row = x + base;
        float v = m[out];
        for (int64_t j = 0; j < inner; ++j) v = row[j] > v ? row[j] : v;
        m[out] = v;
      });
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* row = x + base;
        const float mo = std::isinf(m[out]) ? 0.0f : m[out];
        double acc = 0;
        for (int64_t j = 0; j < inner; ++j) acc += std::exp(row[j] - mo);
        s[out] += acc;
      });
    } else {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* __restrict row = x + base;
        float* __restrict mo = m + out;
        for (int64_t j = 0; j < inner; ++j) mo[j] = row[j] > mo[j] ? row[j] : mo[j];
      });
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* __restrict row = x + base;
        for (int64_t j = 0; j < inner; ++j) {
          const float mo = std::isinf(m[out + j]) ? 0.0f : m[out + j];
          s[out + j] += std::exp(row[j] - mo);
        }
      });
    }
    for (int64_t i = 0; i < geo_.outN(); ++i) {
      y[i] = std::isinf(m[i]) ? m[i] : m[i] + static_cast<float>(std::log(s[i]));
    }
  }

 private:
  ReduceGeometry geo_;
  std::vector<float> max_;
  std::vector<double> sum_;
};

ReduceGeometry checkedGeometry(const KernelSpec& spec, const TensorInfo& in) {
  const std::vector<int64_t>& axes = spec.attrs.getInts("axes");
  for (int64_t a : axes) {
    if (a < 0 || a >= in.rank())
      spec.fail("axis {} is out of range for the input {}", a, in.toString());
  }
  return ReduceGeometry(in.shape(), axes);
}

KernelFactory foldFactory(const std::string& type) {
  return [type](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const TensorInfo& in = spec.inputs.at(0);
    ReduceGeometry geo = checkedGeometry(spec, in);
    const bool extreme = type == "ReduceMax" || type == "ReduceMin";
    const bool isMax = type == "ReduceMax";
    if (extreme) {
      switch (in.dataType()) {
        case DataType::INT32:
          return isMax ? makeExtreme<int32_t, true>(std::move(geo))
                       : makeExtreme<int32_t, false>(std::move(geo));
        case DataType::INT64:
          return isMax ? makeExtreme<int64_t, true>(std::move(geo))
                       : makeExtreme<int64_t, false>(std::move(geo));
        case DataType::INT8:
          return isMax ? makeExtreme<int8_t, true>(std::move(geo))
                       : makeExtreme<int8_t, false>(std::move(geo));
        case DataType::UINT8:
          return isMax ? makeExtreme<uint8_t, true>(std::move(geo))
                       : makeExtreme<uint8_t, false>(std::move(geo));
        default: break;
      }
    }
    if (in.dataType() != DataType::FLOAT) {
      spec.fail("element type of {} is not supported ({})", in.toString(),
                extreme ? "FLOAT, INT32, INT64, INT8, UINT8" : "FLOAT");
    }
    auto plus = [](double a, double b) { return a + b; };
    auto same = [](double a) { return a; };
    if (isMax) return makeExtreme<float, true>(std::move(geo));
    if (type == "ReduceMin") return makeExtreme<float, false>(std::move(geo));
    if (type == "ReduceLogSumExp") return std::make_unique<LogSumExpKernel>(std::move(geo));
    if (type == "ReduceProd") {
      return makeFold<float, double>(
          std::move(geo), 1.0, [](float v) { return static_cast<double>(v); },
          [](double a, double b) { return a * b; }, same);
    }
    if (type == "ReduceL1") {
      return makeFold<float, double>(
          std::move(geo), 0.0, [](float v) { return static_cast<double>(std::abs(v)); }, plus,
          same);
    }
    if (type == "ReduceLogSum") {
      return makeFold<float, double>(
          std::move(geo), 0.0, [](float v) { return static_cast<double>(v); }, plus,
          [](double a) { return std::log(a); });
    }
    auto square = [](float v) { return static_cast<double>(v) * static_cast<double>(v); };
    if (type == "ReduceL2") {
      return makeFold<float, double>(std::move(geo), 0.0, square, plus,
                                     [](double a) { return std::sqrt(a); });
    }
    return makeFold<float, double>(std::move(geo), 0.0, square, plus, same);  // ReduceSumSquare
  };
}

// ReduceSum (FLOAT, INT32, INT64) and ReduceMean (FLOAT) as folds: sums accumulate in double for
// FLOAT, in int64 for the integers; the mean scales the sum by 1 / count (0 * inf gives NaN for
// an empty set, as numpy does).
KernelFactory sumFactory(bool mean) {
  return [mean](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const TensorInfo& in = spec.inputs.at(0);
    ReduceGeometry geo = checkedGeometry(spec, in);
    auto plus = [](auto a, auto b) { return a + b; };
    auto same = [](auto a) { return a; };
    switch (in.dataType()) {
      case DataType::FLOAT: {
        auto widen = [](float v) { return static_cast<double>(v); };
        if (!mean) return makeFold<float, double>(std::move(geo), 0.0, widen, plus, same);
        const double scale = 1.0 / static_cast<double>(geo.count());
        return makeFold<float, double>(std::move(geo), 0.0, widen, plus,
                                       [scale](double a) { return a * scale; });
      }
      case DataType::INT32:
        if (!mean) {
          return makeFold<int32_t, int64_t>(
              std::move(geo), int64_t{0}, [](int32_t v) { return int64_t{v}; }, plus, same);
        }
        break;
      case DataType::INT64:
        if (!mean) return makeFold<int64_t, int64_t>(std::move(geo), int64_t{0}, same, plus, same);
        break;
      default: break;
    }
    spec.fail("element type of {} is not supported ({})", in.toString(),
              mean ? "FLOAT" : "FLOAT, INT32, INT64");
  };
}

XT_REGISTER_KERNEL("ai.onnx", "ReduceSum", sumFactory(false));
XT_REGISTER_KERNEL("ai.onnx", "ReduceMean", sumFactory(true));
XT_REGISTER_KERNEL("ai.onnx", "ReduceMax", foldFactory("ReduceMax"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceMin", foldFactory("ReduceMin"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceProd", foldFactory("ReduceProd"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceL1", foldFactory("ReduceL1"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceL2", foldFactory("ReduceL2"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceLogSum", foldFactory("ReduceLogSum"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceLogSumExp", foldFactory("ReduceLogSumExp"));
XT_REGISTER_KERNEL("ai.onnx", "ReduceSumSquare", foldFactory("ReduceSumSquare"));

// ReduceGrad for the elementwise modes: dx = f(x, y[out], gy[out]) with a row's output element(s).
template <typename F>
void elementwiseGrad(const ReduceGeometry& geo, const float* x, const float* y, const float* gy,
                     float* dx, F f) {
  const int64_t inner = geo.inner();
  if (geo.innerReduced()) {
    geo.forEachRow([&](int64_t base, int64_t out) {
      const float yo = y[out], go = gy[out];
      const float* __restrict xr = x + base;
      float* __restrict dr = dx + base;
      for (int64_t j = 0; j < inner; ++j) dr[j] = f(xr[j], yo, go);
    });
  } else {
    geo.forEachRow([&](int64_t base, int64_t out) {
      const float* __restrict xr = x + base;
      const float* __restrict yr = y + out;
      const float* __restrict gr = gy + out;
      float* __restrict dr = dx + base;
      for (int64_t j = 0; j < inner; ++j) dr[j] = f(xr[j], yr[j], gr[j]);
    });
  }
}

class ReduceGradKernel final : public Kernel {
 public:
  ReduceGradKernel(ReduceGeometry geo, std::string mode)
      : geo_(std::move(geo)), mode_(std::move(mode)) {
    const auto n = static_cast<size_t>(geo_.outN());
    if (mode_ == "max" || mode_ == "min") {
      best_.resize(n);
      at_.resize(n);
    } else if (mode_ == "prod") {
      zeros_.resize(n);
      prod_.resize(n);
    }
  }

  void run(const KernelIO& io) override {
    const float* gy = io.in(0).data<float>();
    const float* x = io.in(1).data<float>();
    const float* y = io.in(2).data<float>();
    float* dx = io.out(0).data<float>();
    const int64_t n = geo_.inN();
    if (mode_ == "max" || mode_ == "min") {
      if (mode_ == "max") {
        argExtreme<float, true>(geo_, x, best_.data(), at_.data());
      } else {
        argExtreme<float, false>(geo_, x, best_.data(), at_.data());
      }
      std::fill(dx, dx + n, 0.0f);
      for (int64_t o = 0; o < geo_.outN(); ++o) {
        if (at_[static_cast<size_t>(o)] >= 0) dx[at_[static_cast<size_t>(o)]] = gy[o];
      }
    } else if (mode_ == "prod") {
      prodGrad(x, gy, dx);
    } else if (mode_ == "l1") {
      elementwiseGrad(geo_, x, y, gy, dx, [](float v, float, float g) {
        return v > 0.0f ? g : (v < 0.0f ? -g : 0.0f);
      });
    } else if (mode_ == "l2") {
      elementwiseGrad(geo_, x, y, gy, dx,
                      [](float v, float r, float g) { return r == 0.0f ? 0.0f : g * v / r; });
    } else if (mode_ == "sumsquare") {
      elementwiseGrad(geo_, x, y, gy, dx, [](float v, float, float g) { return 2.0f * g * v; });
    } else if (mode_ == "logsum") {  // d log(sum x) / dx = 1 / sum x = exp(-y)
      elementwiseGrad(geo_, x, y, gy, dx,
                      [](float, float r, float g) { return g * std::exp(-r); });
    } else {  // logsumexp
      elementwiseGrad(geo_, x, y, gy, dx, [](float v, float r, float g) {
        return std::isinf(r) && r < 0 ? 0.0f : g * std::exp(v - r);
      });
    }
  }

 private:
  // d prod / d x_i = product of the others: with no zero in the set prod/x_i would do, but the
  // product of the non-zero elements (kept separately) times the count of zeros decides exactly:
  // no zero: prodNonZero / x_i (x_i != 0); one zero: prodNonZero at the zero, 0 elsewhere; more: 0.
  void prodGrad(const float* x, const float* gy, float* dx) {
    int64_t* zeros = zeros_.data();
    double* prod = prod_.data();
    std::fill(zeros_.begin(), zeros_.end(), int64_t{0});
    std::fill(prod_.begin(), prod_.end(), 1.0);
    const int64_t inner = geo_.inner();
    if (geo_.innerReduced()) {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* row = x + base;
        int64_t z = 0;
        double p = 1.0;
        for (int64_t j = 0; j < inner; ++j) {
          z += row[j] == 0.0f ? 1 : 0;
          p *= row[j] == 0.0f ? 1.0 : static_cast<double>(row[j]);
        }
        zeros[out] += z;
        prod[out] *= p;
      });
    } else {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* row = x + base;
        for (int64_t j = 0; j < inner; ++j) {
          zeros[out + j] += row[j] == 0.0f ? 1 : 0;
          prod[out + j] *= row[j] == 0.0f ? 1.0 : static_cast<double>(row[j]);
        }
      });
    }
    // Per output element: the product of the others is prod / x (no zero), prod at the zero (one
    // zero), or 0 (more). The first case divides a double by a non-zero float.
    auto grad = [](float v, double p, int64_t z, double g) {
      if (z == 0) return static_cast<float>(g * (p / static_cast<double>(v)));
      return z == 1 && v == 0.0f ? static_cast<float>(g * p) : 0.0f;
    };
    if (geo_.innerReduced()) {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* __restrict row = x + base;
        float* __restrict d = dx + base;
        const double g = gy[out], p = prod[out];
        const int64_t z = zeros[out];
        if (z == 0) {
          const double gp = g * p;
          for (int64_t j = 0; j < inner; ++j) d[j] = static_cast<float>(gp / row[j]);
        } else {
          for (int64_t j = 0; j < inner; ++j) d[j] = grad(row[j], p, z, g);
        }
      });
    } else {
      geo_.forEachRow([&](int64_t base, int64_t out) {
        const float* __restrict row = x + base;
        float* __restrict d = dx + base;
        for (int64_t j = 0; j < inner; ++j) {
          d[j] = grad(row[j], prod[out + j], zeros[out + j], gy[out + j]);
        }
      });
    }
  }

  ReduceGeometry geo_;
  std::string mode_;
  std::vector<float> best_;
  std::vector<int64_t> at_;
  std::vector<int64_t> zeros_;
  std::vector<double> prod_;
};

XT_REGISTER_KERNEL("ai.xtrain", "ReduceGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     const std::string& mode = spec.attrs.getString("mode");
                     if (mode != "max" && mode != "min" && mode != "prod" && mode != "l1" &&
                         mode != "l2" && mode != "logsum" && mode != "logsumexp" &&
                         mode != "sumsquare") {
                       spec.fail("mode '{}' is not a reduction with a gradient", mode);
                     }
                     return std::make_unique<ReduceGradKernel>(
                         checkedGeometry(spec, spec.inputs.at(1)), mode);
                   });

}  // namespace
}  // namespace xtrain::device
