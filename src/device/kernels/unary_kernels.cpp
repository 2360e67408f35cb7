// Kernels for the elementwise unary ops (Neg, Exp, Log, Sqrt, Relu, Sigmoid, Tanh, Identity, Cast),
// Pow, Dropout and their ai.xtrain grad ops (GELU's are in gelu_kernels.cpp). FLOAT, except Neg
// (also INT32, INT64), Identity (any type) and Cast (FLOAT, FLOAT16, DOUBLE, BOOL and the integer
// types INT8 to UINT64).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"
#include "device/kernels/dnnl_eltwise.hpp"
#include "device/kernels/elementwise.hpp"
#include "device/kernels/parallel_elements.hpp"

namespace xtrain::device {
namespace {

void requireType(const KernelSpec& spec, const TensorInfo& info, DataType want, const char* what) {
  if (info.dataType() != want) {
    spec.fail("{} is {}, expected {} (the only element type this kernel supports)", what,
              info.toString(), dataTypeName(want));
  }
}

void requireFloatInputs(const KernelSpec& spec) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    requireType(spec, spec.inputs[i], DataType::FLOAT, i == 0 ? "input 0" : "an input");
  }
}

// y[i] = f(x[i]) over contiguous FLOAT memory.
template <typename F>
KernelFactory unaryFloat(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    requireFloatInputs(spec);
    return makeKernel([f](const KernelIO& io) { mapFloat(io, f); });
  };
}

// gx[i] = f(gy[i], z[i]) for the grad ops (gy, z) -> gx, all of one shape.
template <typename F>
KernelFactory gradFloat(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    requireFloatInputs(spec);
    return makeKernel([f](const KernelIO& io) { mapFloatGrad(io, f); });
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Exp", unaryFloat([](float x) { return std::exp(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Log", unaryFloat([](float x) { return std::log(x); }));
XT_REGISTER_KERNEL("ai.onnx", "Sqrt", unaryFloat([](float x) { return std::sqrt(x); }));
// Tanh on oneDNN (dnnl_eltwise.hpp): libm's tanhf is a scalar call, ~10 ns an element.
XT_REGISTER_KERNEL("ai.onnx", "Tanh", [](const KernelSpec& spec) {
  return dnnl_util::eltwiseForward(spec, dnnl::algorithm::eltwise_tanh);
});
// Sigmoid on oneDNN's logistic (dnnl_eltwise.hpp): libm's expf is a scalar call, and the SE blocks
// of the mobile nets run it on every channel of every step.
XT_REGISTER_KERNEL("ai.onnx", "Sigmoid", [](const KernelSpec& spec) {
  return dnnl_util::eltwiseForward(spec, dnnl::algorithm::eltwise_logistic);
});
XT_REGISTER_KERNEL("ai.onnx", "Relu", unaryFloat([](float x) { return x < 0.0f ? 0.0f : x; }));

XT_REGISTER_KERNEL("ai.xtrain", "ReluGrad",
                   gradFloat([](float gy, float y) { return y > 0.0f ? gy : 0.0f; }));
XT_REGISTER_KERNEL("ai.xtrain", "SqrtGrad",
                   gradFloat([](float gy, float y) { return 0.5f * gy / y; }));
// gy y (1 - y), on oneDNN with Sigmoid.
XT_REGISTER_KERNEL("ai.xtrain", "SigmoidGrad", [](const KernelSpec& spec) {
  return dnnl_util::eltwiseBackward(spec, dnnl::algorithm::eltwise_logistic_use_dst_for_bwd);
});
// gy (1 - y^2), on oneDNN with Tanh.
XT_REGISTER_KERNEL("ai.xtrain", "TanhGrad", [](const KernelSpec& spec) {
  return dnnl_util::eltwiseBackward(spec, dnnl::algorithm::eltwise_tanh_use_dst_for_bwd);
});

template <typename T>
void negTyped(const KernelIO& io) {
  const T* __restrict x = io.in(0).data<T>();
  T* __restrict y = io.out(0).data<T>();
  const int64_t n = io.out(0).nelms();
  for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
}

XT_REGISTER_KERNEL("ai.onnx", "Neg", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType t = spec.inputs.at(0).dataType();
  switch (t) {
    case DataType::FLOAT: return makeKernel(negTyped<float>);
    case DataType::INT32: return makeKernel(negTyped<int32_t>);
    case DataType::INT64: return makeKernel(negTyped<int64_t>);
    default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
  }
});

// A byte copy serves every element type.
XT_REGISTER_KERNEL("ai.onnx", "Identity", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType t = spec.inputs.at(0).dataType();
  if (dataTypeSize(t) == 0) spec.fail("element type {} is not supported", dataTypeName(t));
  return makeKernel([](const KernelIO& io) {
    const size_t bytes = io.out(0).nbytes();
    if (bytes != 0) std::memcpy(io.out(0).raw(), io.in(0).raw(), bytes);
  });
});

// ---- Cast
// -----------------------------------------------------------------------------------------------

// Element tags for the storage types that need conversion logic of their own.
struct Half {};     // FLOAT16 stored as uint16_t
struct Boolean {};  // BOOL stored as one byte, 0 or 1

template <typename Tag>
struct Elem {
  using Storage = Tag;
  static Tag load(Tag s) { return s; }
};
template <>
struct Elem<Half> {
  using Storage = uint16_t;
  static float load(uint16_t s) { return halfToFloat(s); }
};
template <>
struct Elem<Boolean> {
  using Storage = uint8_t;
  static uint8_t load(uint8_t s) { return s != 0 ? 1 : 0; }
};

// Converts one value to the destination's storage. Floating -> integer truncates toward zero and
// saturates (NaN gives 0), so out-of-range values are defined (ONNX leaves them unspecified).
template <typename DstTag, typename V>
typename Elem<DstTag>::Storage convertTo(V v) {
  using D = typename Elem<DstTag>::Storage;
  if constexpr (std::is_same_v<DstTag, Half>) {
    return floatToHalf(static_cast<float>(v));
  } else if constexpr (std::is_same_v<DstTag, Boolean>) {
    return v != V{0} ? 1 : 0;
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    if (std::isnan(v)) return D{0};
    if (v <= static_cast<V>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (v >= static_cast<V>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

using CastFn = void (*)(const std::byte*, std::byte*, int64_t);

template <typename SrcTag, typename DstTag>
void castLoop(const std::byte* src, std::byte* dst, int64_t n) {
  const auto* __restrict s = reinterpret_cast<const typename Elem<SrcTag>::Storage*>(src);
  auto* __restrict d = reinterpret_cast<typename Elem<DstTag>::Storage*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = convertTo<DstTag>(Elem<SrcTag>::load(s[i]));
}

template <typename SrcTag>
CastFn castFrom(DataType to) {
  switch (to) {
    case DataType::FLOAT: return &castLoop<SrcTag, float>;
    case DataType::DOUBLE: return &castLoop<SrcTag, double>;
    case DataType::FLOAT16: return &castLoop<SrcTag, Half>;
    case DataType::INT32: return &castLoop<SrcTag, int32_t>;
    case DataType::INT64: return &castLoop<SrcTag, int64_t>;
    case DataType::BOOL: return &castLoop<SrcTag, Boolean>;
    case DataType::UINT8: return &castLoop<SrcTag, uint8_t>;
    case DataType::INT8: return &castLoop<SrcTag, int8_t>;
    case DataType::UINT16: return &castLoop<SrcTag, uint16_t>;
    case DataType::INT16: return &castLoop<SrcTag, int16_t>;
    case DataType::UINT32: return &castLoop<SrcTag, uint32_t>;
    case DataType::UINT64: return &castLoop<SrcTag, uint64_t>;
    default: return nullptr;
  }
}

CastFn castFunction(DataType from, DataType to) {
  switch (from) {
    case DataType::FLOAT: return castFrom<float>(to);
    case DataType::DOUBLE: return castFrom<double>(to);
    case DataType::FLOAT16: return castFrom<Half>(to);
    case DataType::INT32: return castFrom<int32_t>(to);
    case DataType::INT64: return castFrom<int64_t>(to);
    case DataType::BOOL: return castFrom<Boolean>(to);
    case DataType::UINT8: return castFrom<uint8_t>(to);
    case DataType::INT8: return castFrom<int8_t>(to);
    case DataType::UINT16: return castFrom<uint16_t>(to);
    case DataType::INT16: return castFrom<int16_t>(to);
    case DataType::UINT32: return castFrom<uint32_t>(to);
    case DataType::UINT64: return castFrom<uint64_t>(to);
    default: return nullptr;
  }
}

XT_REGISTER_KERNEL("ai.onnx", "Cast", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType from = spec.inputs.at(0).dataType();
  const DataType to = spec.outputs.at(0).dataType();
  const CastFn fn = castFunction(from, to);
  if (fn == nullptr) {
    spec.fail(
        "cannot cast {} to {} (supported: FLOAT, FLOAT16, DOUBLE, BOOL and the integer types INT8 "
        "to "
        "UINT64)",
        dataTypeName(from), dataTypeName(to));
  }
  if (from == to) {
    return makeKernel([](const KernelIO& io) {
      const size_t bytes = io.out(0).nbytes();
      if (bytes != 0) std::memcpy(io.out(0).raw(), io.in(0).raw(), bytes);
    });
  }
  return makeKernel(
      [fn](const KernelIO& io) { fn(io.in(0).raw(), io.out(0).raw(), io.out(0).nelms()); });
});

// ---- Pow
// ------------------------------------------------------------------------------------------------

// The exponent as FLOAT: the buffer itself, or a converted copy in scratch (integer exponents,
// opset 12+).
const float* asFloat(const HostTensor& t, std::vector<float>& scratch) {
  if (t.dataType() == DataType::FLOAT) return t.data<float>();
  const int64_t n = t.nelms();
  for (int64_t i = 0; i < n; ++i)
    scratch[static_cast<size_t>(i)] = static_cast<float>(t.getAsDouble(i));
  return scratch.data();
}

void requireExponentType(const KernelSpec& spec, const TensorInfo& b) {
  const DataType t = b.dataType();
  if (t != DataType::FLOAT && t != DataType::INT32 && t != DataType::INT64) {
    spec.fail("exponent is {}, expected FLOAT, INT32 or INT64", b.toString());
  }
}

// Broadcasting layout shared by Pow and its grad ops: a and b against the output (gradient) shape.
struct PowLayout {
  Shape out;
  std::vector<int64_t> sa, sb;
  bool aFull = false;    // a has the output's shape
  bool bScalar = false;  // b has one element

  PowLayout(const TensorInfo& a, const TensorInfo& b, const TensorInfo& y)
      : out(y.shape()),
        sa(broadcastStrides(a.shape(), y.shape())),
        sb(broadcastStrides(b.shape(), y.shape())),
        aFull(a.shape() == y.shape()),
        bScalar(b.nelms() == 1) {}
};

class PowKernel final : public Kernel {
 public:
  PowKernel(const KernelSpec& spec)
      : layout_(spec.inputs[0], spec.inputs[1], spec.outputs[0]),
        scratch_(static_cast<size_t>(spec.inputs[1].nelms())) {}

  void run(const KernelIO& io) override {
    const float* a = io.in(0).data<float>();
    const float* b = asFloat(io.in(1), scratch_);
    float* __restrict y = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    if (layout_.aFull && layout_.bScalar) {
      const float s = b[0];
      if (s == 2.0f) {
        for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i];
      } else if (s == 1.0f) {
        for (int64_t i = 0; i < n; ++i) y[i] = a[i];
      } else {
        for (int64_t i = 0; i < n; ++i) y[i] = std::pow(a[i], s);
      }
      return;
    }
    forEachBroadcast2(layout_.out, layout_.sa, layout_.sb,
                      [&](int64_t o, int64_t ia, int64_t ib) { y[o] = std::pow(a[ia], b[ib]); });
  }

 private:
  PowLayout layout_;
  std::vector<float> scratch_;
};

XT_REGISTER_KERNEL("ai.onnx", "Pow", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireType(spec, spec.inputs.at(0), DataType::FLOAT, "base");
  requireExponentType(spec, spec.inputs.at(1));
  return std::make_unique<PowKernel>(spec);
});

// PowGradBase(gy, a, b, y): gy * b * a^(b-1); exactly 0 where b == 0 (a^0 is constant, even at a ==
// 0).
class PowGradBaseKernel final : public Kernel {
 public:
  PowGradBaseKernel(const KernelSpec& spec)
      : layout_(spec.inputs[1], spec.inputs[2], spec.inputs[0]),
        scratch_(static_cast<size_t>(spec.inputs[2].nelms())) {}

  void run(const KernelIO& io) override {
    const float* gy = io.in(0).data<float>();
    const float* a = io.in(1).data<float>();
    const float* b = asFloat(io.in(2), scratch_);
    float* ga = io.out(0).data<float>();
    forEachBroadcast2(layout_.out, layout_.sa, layout_.sb, [&](int64_t o, int64_t ia, int64_t ib) {
      const float e = b[ib];
      ga[o] = e == 0.0f ? 0.0f : gy[o] * e * std::pow(a[ia], e - 1.0f);
    });
  }

 private:
  PowLayout layout_;
  std::vector<float> scratch_;
};

XT_REGISTER_KERNEL("ai.xtrain", "PowGradBase",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireType(spec, spec.inputs.at(0), DataType::FLOAT, "the gradient");
                     requireType(spec, spec.inputs.at(1), DataType::FLOAT, "base");
                     requireType(spec, spec.inputs.at(3), DataType::FLOAT, "the output");
                     requireExponentType(spec, spec.inputs.at(2));
                     return std::make_unique<PowGradBaseKernel>(spec);
                   });

// PowGradExponent(gy, a, y): gy * y * log(a); 0 where a == 0 and b >= 0 (y = 0^b finite: log(a) is
// -inf there and 0^b jumps at b = 0, so there is no derivative to give; 0 is what PyTorch gives).
// Where a == 0 and b < 0 (y = inf) it is -inf times gy's sign, and nan where b is nan, as PyTorch.
XT_REGISTER_KERNEL("ai.xtrain", "PowGradExponent",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloatInputs(spec);
                     PowLayout layout(spec.inputs[1], spec.inputs[1], spec.inputs[0]);
                     return makeKernel([layout](const KernelIO& io) {
                       const float* gy = io.in(0).data<float>();
                       const float* a = io.in(1).data<float>();
                       const float* y = io.in(2).data<float>();
                       float* gb = io.out(0).data<float>();
                       forEachBroadcast2(layout.out, layout.sa, layout.sa,
                                         [&](int64_t o, int64_t ia, int64_t) {
                                           const bool flat = a[ia] == 0.0f && std::isfinite(y[o]);
                                           gb[o] = flat ? 0.0f : gy[o] * y[o] * std::log(a[ia]);
                                         });
                     });
                   });

// ---- Dropout
// --------------------------------------------------------------------------------------------

// Counter-based random bits: SplitMix64's output number `counter` from state `seed`. Each element's
// bits depend only on (seed, index), so the mask is reproducible and independent of how the loop is
// split.
inline uint64_t randomBits(uint64_t seed, uint64_t counter) {
  uint64_t x = seed + (counter + 1) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float checkedRatio(const KernelSpec& spec) {
  const float ratio = spec.attrs.getFloat("ratio");
  if (!(ratio >= 0.0f && ratio < 1.0f)) spec.fail("ratio is {}, expected a value in [0, 1)", ratio);
  return ratio;
}

// The mask is BOOL (one byte 0/1) or, for opsets 7-9, FLOAT (1.0f kept, 0.0f dropped). The seed
// attribute, when given, is hashed into the execution seed.
class DropoutKernel final : public Kernel {
 public:
  explicit DropoutKernel(const KernelSpec& spec) {
    const float ratio = checkedRatio(spec);
    if (spec.hasOutput(1)) {
      const DataType m = spec.outputs[1].dataType();
      if (m != DataType::BOOL && m != DataType::FLOAT) {
        spec.fail("mask is {}; expected BOOL or FLOAT", spec.outputs[1].toString());
      }
      floatMask_ = m == DataType::FLOAT;
    }
    if (spec.attrs.has("seed")) {
      seedSalt_ = randomBits(static_cast<uint64_t>(spec.attrs.getInt("seed")), 0x5eedull);
    }
    active_ = spec.attrs.getInt("training_mode") != 0 && ratio > 0.0f;
    scale_ = 1.0f / (1.0f - ratio);
    // An element is kept when its 32 random bits are >= threshold: probability 1 - ratio.
    const double t = std::round(static_cast<double>(ratio) * 4294967296.0);
    threshold_ = static_cast<uint32_t>(std::min(t, 4294967295.0));
  }

  void run(const KernelIO& io) override {
    const float* x = io.in(0).data<float>();
    float* y = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    const uint64_t seed = io.seed ^ seedSalt_;
    if (io.hasOut(1) && floatMask_) {
      float* mask = io.out(1).data<float>();
      if (!active_) {
        if (n != 0) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
        std::fill(mask, mask + n, 1.0f);
        return;
      }
      apply<true>(x, y, mask, n, seed);
      return;
    }
    uint8_t* mask = io.hasOut(1) ? reinterpret_cast<uint8_t*>(io.out(1).raw()) : nullptr;
    if (!active_) {
      if (n != 0) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
      if (mask != nullptr && n != 0) std::memset(mask, 1, static_cast<size_t>(n));
      return;
    }
    if (mask != nullptr) {
      apply<true>(x, y, mask, n, seed);
    } else {
      apply<false>(x, y, mask, n, seed);
    }
  }

 private:
  // One 64-bit hash gives the bits of two consecutive elements.
  template <bool kMask, typename M>
  void apply(const float* __restrict x, float* __restrict y, M* __restrict mask, int64_t n,
             uint64_t seed) const {
    const uint32_t thr = threshold_;
    const float scale = scale_;
    auto one = [&](int64_t i, uint32_t bits) {
      const bool keep = bits >= thr;
      y[i] = keep ? x[i] * scale : 0.0f;
      if constexpr (kMask) mask[i] = keep ? M{1} : M{0};
    };
    // The bits depend on the element's index only, so the chunks (of an even length) run in
    // parallel and give the same mask with any thread count.
    static_assert(kParallelChunk % 2 == 0);
    forEachChunk(n, [&](int64_t, int64_t begin, int64_t end) {
      const int64_t pairEnd = end / 2;
      for (int64_t p = begin / 2; p < pairEnd; ++p) {
        const uint64_t h = randomBits(seed, static_cast<uint64_t>(p));
        one(2 * p, static_cast<uint32_t>(h));
        one(2 * p + 1, static_cast<uint32_t>(h >> 32));
      }
      if (end == n && n % 2 != 0) {
        one(n - 1, static_cast<uint32_t>(randomBits(seed, static_cast<uint64_t>(n / 2))));
      }
    });
  }

  bool active_ = false;
  bool floatMask_ = false;
  uint64_t seedSalt_ = 0;
  float scale_ = 1.0f;
  uint32_t threshold_ = 0;
};

XT_REGISTER_KERNEL("ai.onnx", "Dropout", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireType(spec, spec.inputs.at(0), DataType::FLOAT, "input 0");
  if (spec.inputs.size() > 1) spec.fail("ratio and training_mode must be attributes by now");
  return std::make_unique<DropoutKernel>(spec);
});

// DropoutGrad(gy, mask): gx = mask ? gy / (1 - ratio) : 0; the mask BOOL or (opsets 7-9) FLOAT.
XT_REGISTER_KERNEL("ai.xtrain", "DropoutGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireType(spec, spec.inputs.at(0), DataType::FLOAT, "input 0");
                     const float scale = 1.0f / (1.0f - checkedRatio(spec));
                     if (spec.inputs.at(1).dataType() == DataType::FLOAT) {
                       return makeKernel([scale](const KernelIO& io) {
                         const float* __restrict gy = io.in(0).data<float>();
                         const float* __restrict mask = io.in(1).data<float>();
                         float* __restrict gx = io.out(0).data<float>();
                         forEachChunk(io.out(0).nelms(), [&](int64_t, int64_t b, int64_t e) {
                           for (int64_t i = b; i < e; ++i) {
                             gx[i] = mask[i] != 0.0f ? gy[i] * scale : 0.0f;
                           }
                         });
                       });
                     }
                     requireType(spec, spec.inputs.at(1), DataType::BOOL, "the mask");
                     return makeKernel([scale](const KernelIO& io) {
                       const float* __restrict gy = io.in(0).data<float>();
                       const uint8_t* __restrict mask =
                           reinterpret_cast<const uint8_t*>(io.in(1).raw());
                       float* __restrict gx = io.out(0).data<float>();
                       forEachChunk(io.out(0).nelms(), [&](int64_t, int64_t b, int64_t e) {
                         for (int64_t i = b; i < e; ++i)
                           gx[i] = mask[i] != 0 ? gy[i] * scale : 0.0f;
                       });
                     });
                   });

}  // namespace
}  // namespace xtrain::device
