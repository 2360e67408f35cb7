// Kernels for the ops of src/ir/ops/elementwise_ops.cpp: math functions, activations and their
// grad ops (FLOAT; FLOAT16 runs promoted), Abs/Sign/Clip/Max/Min/Mod (FLOAT, INT32, INT64),
// comparisons (FLOAT, INT32, INT64, BOOL -> BOOL), logical ops (BOOL) and Where (any element type).
// Every loop runs over raw pointers with the per-element function inlined; broadcasting goes
// through elementwise.hpp, which has fast paths for equal shapes and scalar operands. The file is
// compiled with -fno-trapping-math (src/device/CMakeLists.txt), so that selects vectorise; loads
// are hoisted out of the selects for the same reason.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

#include "device/kernel.hpp"
#include "device/kernels/elementwise.hpp"
#include "device/kernels/vector_math.hpp"

namespace xtrain::device {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// make(attrs) returns the per-element function float -> float; y[i] = f(x[i]).
template <typename Make>
KernelFactory floatUnary(Make make) {
  return [make](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    auto f = make(spec.attrs);
    return makeKernel([f](const KernelIO& io) { mapFloat(io, f); });
  };
}

// make(attrs) returns (gy, z) -> gx; gx[i] = f(gy[i], z[i]).
template <typename Make>
KernelFactory floatGrad(Make make) {
  return [make](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    auto f = make(spec.attrs);
    return makeKernel([f](const KernelIO& io) { mapFloatGrad(io, f); });
  };
}

// A function with no attributes.
template <typename F>
auto fixed(F f) {
  return [f](const Attributes&) { return f; };
}

constexpr float kTwoOverSqrtPi = 1.1283791670955126f;

XT_REGISTER_KERNEL("ai.onnx", "Erf", floatUnary(fixed([](float x) { return vmath::erf(x); })));
XT_REGISTER_KERNEL("ai.xtrain", "ErfGrad", floatGrad(fixed([](float gy, float x) {
                     return gy * kTwoOverSqrtPi * vmath::exp(-x * x);
                   })));
// Sin and Cos: the vectorised loop for |x| <= vmath::kTrigMax, then libm for the (rare) larger,
// infinite or NaN arguments.
bool outsideTrigRange(float x) {
  return !(std::fabs(x) <= vmath::kTrigMax);
}

template <bool IsSin>
std::unique_ptr<Kernel> trigFactory(const KernelSpec& spec) {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    const float* __restrict x = io.in(0).data<float>();
    float* __restrict y = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    int32_t outside = 0;  // a count: GCC vectorises an int sum, not a bool or
    for (int64_t i = 0; i < n; ++i) {
      y[i] = IsSin ? vmath::sinBounded(x[i]) : vmath::cosBounded(x[i]);
      outside += outsideTrigRange(x[i]) ? 1 : 0;
    }
    if (outside == 0) return;
    for (int64_t i = 0; i < n; ++i) {
      if (outsideTrigRange(x[i])) y[i] = IsSin ? std::sin(x[i]) : std::cos(x[i]);
    }
  });
}

// SinGrad = gy cos(x); CosGrad = -gy sin(x).
template <bool IsSin>
std::unique_ptr<Kernel> trigGradFactory(const KernelSpec& spec) {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    const float* __restrict gy = io.in(0).data<float>();
    const float* __restrict x = io.in(1).data<float>();
    float* __restrict gx = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    int32_t outside = 0;
    for (int64_t i = 0; i < n; ++i) {
      gx[i] = IsSin ? gy[i] * vmath::cosBounded(x[i]) : -gy[i] * vmath::sinBounded(x[i]);
      outside += outsideTrigRange(x[i]) ? 1 : 0;
    }
    if (outside == 0) return;
    for (int64_t i = 0; i < n; ++i) {
      if (outsideTrigRange(x[i])) gx[i] = IsSin ? gy[i] * std::cos(x[i]) : -gy[i] * std::sin(x[i]);
    }
  });
}

XT_REGISTER_KERNEL("ai.onnx", "Sin", trigFactory<true>);
XT_REGISTER_KERNEL("ai.onnx", "Cos", trigFactory<false>);
XT_REGISTER_KERNEL("ai.xtrain", "SinGrad", trigGradFactory<true>);
XT_REGISTER_KERNEL("ai.xtrain", "CosGrad", trigGradFactory<false>);
XT_REGISTER_KERNEL("ai.onnx", "Reciprocal", floatUnary(fixed([](float x) { return 1.0f / x; })));
XT_REGISTER_KERNEL("ai.xtrain", "ReciprocalGrad",
                   floatGrad(fixed([](float gy, float y) { return -gy * y * y; })));
XT_REGISTER_KERNEL("ai.onnx", "Softplus",
                   floatUnary(fixed([](float x) { return vmath::softplus(x); })));
XT_REGISTER_KERNEL("ai.xtrain", "SoftplusGrad", floatGrad(fixed([](float gy, float x) {
                     return gy / (1.0f + vmath::exp(-x));
                   })));
XT_REGISTER_KERNEL("ai.onnx", "Softsign",
                   floatUnary(fixed([](float x) { return x / (1.0f + std::fabs(x)); })));
XT_REGISTER_KERNEL("ai.xtrain", "SoftsignGrad", floatGrad(fixed([](float gy, float x) {
                     const float d = 1.0f + std::fabs(x);
                     return gy / (d * d);
                   })));
// x tanh(softplus(x)); d/dx = t + x sigmoid(x) (1 - t^2).
XT_REGISTER_KERNEL("ai.onnx", "Mish",
                   floatUnary(fixed([](float x) { return x * vmath::tanhSoftplus(x); })));
XT_REGISTER_KERNEL("ai.xtrain", "MishGrad", floatGrad(fixed([](float gy, float x) {
                     const float t = vmath::tanhSoftplus(x);
                     const float s = 1.0f / (1.0f + vmath::exp(-x));
                     return gy * (t + x * s * (1.0f - t * t));
                   })));
// x max(0, min(1, x/6 + 1/2)); PyTorch's gradient: 0 below -3, x/3 + 1/2 on [-3, 3], 1 above.
XT_REGISTER_KERNEL("ai.onnx", "HardSwish", floatUnary(fixed([](float x) {
                     const float v = x * (1.0f / 6.0f) + 0.5f;
                     return x * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));
                   })));
XT_REGISTER_KERNEL("ai.xtrain", "HardSwishGrad", floatGrad(fixed([](float gy, float x) {
                     return x < -3.0f ? 0.0f : (x > 3.0f ? gy : gy * (x * (1.0f / 3.0f) + 0.5f));
                   })));

XT_REGISTER_KERNEL("ai.onnx", "LeakyRelu", floatUnary([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 0.01f);
                     return [alpha](float x) { return x < 0.0f ? alpha * x : x; };
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "LeakyReluGrad", floatGrad([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 0.01f);
                     return [alpha](float gy, float x) { return x > 0.0f ? gy : alpha * gy; };
                   }));
// x where x > alpha, else 0; gx = gy where x > alpha (0 at the step itself).
XT_REGISTER_KERNEL("ai.onnx", "ThresholdedRelu", floatUnary([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.0f);
                     return [alpha](float x) { return x > alpha ? x : 0.0f; };
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "ThresholdedReluGrad", floatGrad([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.0f);
                     return [alpha](float gy, float x) { return x > alpha ? gy : 0.0f; };
                   }));
XT_REGISTER_KERNEL("ai.onnx", "Elu", floatUnary([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.0f);
                     return [alpha](float x) {
                       const float e = alpha * vmath::expm1(std::min(x, 0.0f));
                       return x > 0.0f ? x : e;
                     };
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "EluGrad", floatGrad([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.0f);
                     return [alpha](float gy, float x) {
                       const float e = gy * alpha * vmath::exp(std::min(x, 0.0f));
                       return x > 0.0f ? gy : e;
                     };
                   }));
XT_REGISTER_KERNEL("ai.onnx", "Selu", floatUnary([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.67326319217681884765625f);
                     const float gamma = a.getFloat("gamma", 1.05070102214813232421875f);
                     return [alpha, gamma](float x) {
                       const float e = alpha * vmath::expm1(std::min(x, 0.0f));
                       return gamma * (x > 0.0f ? x : e);
                     };
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "SeluGrad", floatGrad([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.67326319217681884765625f);
                     const float gamma = a.getFloat("gamma", 1.05070102214813232421875f);
                     return [alpha, gamma](float gy, float x) {
                       const float e = alpha * vmath::exp(std::min(x, 0.0f));
                       return gy * gamma * (x > 0.0f ? 1.0f : e);
                     };
                   }));
// max(0, x) + min(0, alpha (exp(x/alpha) - 1)).
XT_REGISTER_KERNEL("ai.onnx", "Celu", floatUnary([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 1.0f);
                     const float inv = 1.0f / alpha;
                     return [alpha, inv](float x) {
                       const float e = alpha * vmath::expm1(std::min(x, 0.0f) * inv);
                       return x > 0.0f ? x : e;
                     };
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "CeluGrad", floatGrad([](const Attributes& a) {
                     const float inv = 1.0f / a.getFloat("alpha", 1.0f);
                     return [inv](float gy, float x) {
                       const float e = gy * vmath::exp(std::min(x, 0.0f) * inv);
                       return x > 0.0f ? gy : e;
                     };
                   }));
XT_REGISTER_KERNEL("ai.onnx", "HardSigmoid", floatUnary([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 0.2f);
                     const float beta = a.getFloat("beta", 0.5f);
                     return [alpha, beta](float x) {
                       const float v = alpha * x + beta;
                       return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
                     };
                   }));
XT_REGISTER_KERNEL("ai.xtrain", "HardSigmoidGrad", floatGrad([](const Attributes& a) {
                     const float alpha = a.getFloat("alpha", 0.2f);
                     const float beta = a.getFloat("beta", 0.5f);
                     return [alpha, beta](float gy, float x) {
                       const float v = alpha * x + beta;
                       return (v > 0.0f && v < 1.0f) ? gy * alpha : 0.0f;
                     };
                   }));

XT_REGISTER_KERNEL("ai.onnx", "Floor", floatUnary(fixed([](float x) { return vmath::floor(x); })));
XT_REGISTER_KERNEL("ai.onnx", "Ceil", floatUnary(fixed([](float x) { return vmath::ceil(x); })));
// Halves to even: nearbyint in the default rounding mode (round to nearest, ties to even).
XT_REGISTER_KERNEL("ai.onnx", "Round",
                   floatUnary(fixed([](float x) { return vmath::nearbyint(x); })));

XT_REGISTER_KERNEL("ai.xtrain", "AbsGrad", floatGrad(fixed([](float gy, float x) {
                     return x > 0.0f ? gy : (x < 0.0f ? -gy : 0.0f);
                   })));

// ---- Abs, Sign (FLOAT, INT32, INT64)

template <typename T, typename F>
void unaryTyped(const KernelIO& io, F f) {
  const T* __restrict x = elems<T>(io.in(0));
  T* __restrict y = elems<T>(io.out(0));
  const int64_t n = io.out(0).nelms();
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// f is a generic lambda; the kernel is instantiated for FLOAT, INT32 and INT64.
template <typename F>
KernelFactory numericUnary(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const DataType t = spec.inputs.at(0).dataType();
    switch (t) {
      case DataType::FLOAT:
        return makeKernel([f](const KernelIO& io) { unaryTyped<float>(io, f); });
      case DataType::INT32:
        return makeKernel([f](const KernelIO& io) { unaryTyped<int32_t>(io, f); });
      case DataType::INT64:
        return makeKernel([f](const KernelIO& io) { unaryTyped<int64_t>(io, f); });
      default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
    }
  };
}

// |INT_MIN| wraps to INT_MIN (as numpy) instead of overflowing.
XT_REGISTER_KERNEL("ai.onnx", "Abs", numericUnary([](auto x) {
                     using T = decltype(x);
                     if constexpr (std::is_integral_v<T>) {
                       using U = std::make_unsigned_t<T>;
                       return x < 0 ? static_cast<T>(U{0} - static_cast<U>(x)) : x;
                     } else {
                       return std::fabs(x);
                     }
                   }));
// NaN stays NaN.
XT_REGISTER_KERNEL("ai.onnx", "Sign", numericUnary([](auto x) {
                     using T = decltype(x);
                     return x > T{0} ? T{1} : (x < T{0} ? T{-1} : x);
                   }));

XT_REGISTER_KERNEL("ai.xtrain", "ZerosLike", [](const KernelSpec&) -> std::unique_ptr<Kernel> {
  return makeKernel([](const KernelIO& io) { io.out(0).fillZero(); });
});

// ---- Clip

// min(max(x, lo), hi): with lo > hi every element becomes hi (the ONNX spec); NaN passes through.
template <typename T>
void clipTyped(const KernelIO& io, T lo, T hi) {
  if (io.hasIn(1)) lo = elems<T>(io.in(1))[0];
  if (io.hasIn(2)) hi = elems<T>(io.in(2))[0];
  unaryTyped<T>(io, [lo, hi](T x) {
    const T v = x < lo ? lo : x;
    return v > hi ? hi : v;
  });
}

template <typename T>
T clipBound(const KernelSpec& spec, const char* name, T fallback) {
  if (!spec.attrs.has(name)) return fallback;
  const float v = spec.attrs.getFloat(name);
  if constexpr (std::is_integral_v<T>) {
    // float(max) is 2^31 or 2^63, one past the largest value: excluded.
    if (!(v >= static_cast<float>(std::numeric_limits<T>::lowest()) &&
          v < static_cast<float>(std::numeric_limits<T>::max()))) {
      spec.fail("attribute {} is {}, outside the range of {}", name, v,
                dataTypeName(spec.inputs.at(0).dataType()));
    }
  }
  return static_cast<T>(v);
}

XT_REGISTER_KERNEL("ai.onnx", "Clip", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType t = spec.inputs.at(0).dataType();
  for (size_t i = 1; i < spec.inputs.size(); ++i) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != t) {
      spec.fail("input {} is {}, expected {}", i, spec.inputs[i].toString(), dataTypeName(t));
    }
  }
  switch (t) {
    case DataType::FLOAT: {
      const float lo = clipBound(spec, "min", -kInf), hi = clipBound(spec, "max", kInf);
      return makeKernel([lo, hi](const KernelIO& io) { clipTyped<float>(io, lo, hi); });
    }
    case DataType::INT32: {
      const int32_t lo = clipBound(spec, "min", std::numeric_limits<int32_t>::lowest());
      const int32_t hi = clipBound(spec, "max", std::numeric_limits<int32_t>::max());
      return makeKernel([lo, hi](const KernelIO& io) { clipTyped<int32_t>(io, lo, hi); });
    }
    case DataType::INT64: {
      const int64_t lo = clipBound(spec, "min", std::numeric_limits<int64_t>::lowest());
      const int64_t hi = clipBound(spec, "max", std::numeric_limits<int64_t>::max());
      return makeKernel([lo, hi](const KernelIO& io) { clipTyped<int64_t>(io, lo, hi); });
    }
    default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
  }
});

// ClipGrad(gy, x, [min], [max]): gy where lo <= x <= hi.
XT_REGISTER_KERNEL("ai.xtrain", "ClipGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  const float lo0 = spec.attrs.getFloat("min", -kInf), hi0 = spec.attrs.getFloat("max", kInf);
  return makeKernel([lo0, hi0](const KernelIO& io) {
    const float lo = io.hasIn(2) ? io.in(2).data<float>()[0] : lo0;
    const float hi = io.hasIn(3) ? io.in(3).data<float>()[0] : hi0;
    const float* __restrict gy = io.in(0).data<float>();
    const float* __restrict x = io.in(1).data<float>();
    float* __restrict gx = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i], g = gy[i];
      gx[i] = (v >= lo && v <= hi) ? g : 0.0f;
    }
  });
});

// ---- Max, Min

// Copies x, broadcast, into y.
template <typename T>
void broadcastCopy(const HostTensor& x, HostTensor& y) {
  if (x.shape() == y.shape()) {
    if (y.nbytes() != 0) std::memcpy(y.raw(), x.raw(), y.nbytes());
    return;
  }
  const T* px = elems<T>(x);
  T* py = elems<T>(y);
  forEachBroadcast2(y.shape(), broadcastStrides(x.shape(), y.shape()),
                    std::vector<int64_t>(y.shape().size(), 0),
                    [&](int64_t o, int64_t i, int64_t) { py[o] = px[i]; });
}

// NaN propagates (a NaN in either operand gives NaN), as in numpy and PyTorch.
template <bool IsMax>
struct Extremum {
  template <typename T>
  T operator()(T a, T b) const {
    const bool takeB = IsMax ? (b > a) : (b < a);
    if constexpr (std::is_floating_point_v<T>) {
      const bool take = takeB | (b != b);
      return take ? b : a;
    } else {
      return takeB ? b : a;
    }
  }
};

template <typename T, bool IsMax>
void maxMinTyped(const KernelIO& io) {
  HostTensor& y = io.out(0);
  if (io.inputs.size() == 1) {
    broadcastCopy<T>(io.in(0), y);
    return;
  }
  broadcastBinary<T, T, T>(io.in(0), io.in(1), y, Extremum<IsMax>{});
  for (size_t k = 2; k < io.inputs.size(); ++k) {
    broadcastBinary<T, T, T>(y, io.in(k), y, Extremum<IsMax>{});
  }
}

template <bool IsMax>
std::unique_ptr<Kernel> maxMinFactory(const KernelSpec& spec) {
  const DataType t = spec.outputs.at(0).dataType();
  switch (t) {
    case DataType::FLOAT: return makeKernel(maxMinTyped<float, IsMax>);
    case DataType::INT32: return makeKernel(maxMinTyped<int32_t, IsMax>);
    case DataType::INT64: return makeKernel(maxMinTyped<int64_t, IsMax>);
    default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
  }
}

XT_REGISTER_KERNEL("ai.onnx", "Max", maxMinFactory<true>);
XT_REGISTER_KERNEL("ai.onnx", "Min", maxMinFactory<false>);

// MaxMinGrad(gy, y, x_i, x_0, ..., x_{i-1}): gy where x_i == y and no earlier x_j == y.
XT_REGISTER_KERNEL("ai.xtrain", "MaxMinGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     return makeKernel([](const KernelIO& io) {
                       const HostTensor& y = io.in(1);
                       HostTensor& gx = io.out(0);
                       std::memcpy(gx.raw(), io.in(0).raw(), gx.nbytes());
                       float* pg = gx.data<float>();
                       const float* py = y.data<float>();
                       const auto sy = broadcastStrides(y.shape(), y.shape());
                       for (size_t k = 2; k < io.inputs.size(); ++k) {
                         const HostTensor& x = io.in(k);
                         const float* px = x.data<float>();
                         const bool self =
                             k ==
                             2;  // x_i itself: keep where equal; earlier ones: drop where equal
                         if (x.shape() == y.shape()) {
                           const int64_t n = y.nelms();
                           for (int64_t o = 0; o < n; ++o) {
                             const float g = pg[o];
                             pg[o] = ((px[o] == py[o]) != self) ? 0.0f : g;
                           }
                         } else {
                           forEachBroadcast2(y.shape(), sy, broadcastStrides(x.shape(), y.shape()),
                                             [&](int64_t o, int64_t iy, int64_t ix) {
                                               const float g = pg[o];
                                               pg[o] = ((px[ix] == py[iy]) != self) ? 0.0f : g;
                                             });
                         }
                       }
                     });
                   });

// ---- PRelu

XT_REGISTER_KERNEL("ai.onnx", "PRelu", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    broadcastBinary<float, float, float>(io.in(0), io.in(1), io.out(0),
                                         [](float x, float s) { return x < 0.0f ? s * x : x; });
  });
});

// PReluGrad(gy, x, slope) -> (gx, gslope at x's shape).
XT_REGISTER_KERNEL("ai.xtrain", "PReluGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    const float* gy = io.in(0).data<float>();
    const HostTensor& x = io.in(1);
    const HostTensor& s = io.in(2);
    const float* px = x.data<float>();
    const float* ps = s.data<float>();
    float* gx = io.out(0).data<float>();
    float* gs = io.out(1).data<float>();
    auto body = [&](int64_t o, int64_t is) {
      const float g = gy[o], v = px[o], sl = ps[is];
      const bool pos = v > 0.0f;
      gx[o] = pos ? g : g * sl;
      gs[o] = pos ? 0.0f : g * v;
    };
    if (s.nelms() == 1) {
      const int64_t n = x.nelms();
      for (int64_t o = 0; o < n; ++o) body(o, 0);
    } else if (s.shape() == x.shape()) {
      const int64_t n = x.nelms();
      for (int64_t o = 0; o < n; ++o) body(o, o);
    } else {
      forEachBroadcast2(x.shape(), broadcastStrides(s.shape(), x.shape()),
                        std::vector<int64_t>(x.shape().size(), 0),
                        [&](int64_t o, int64_t is, int64_t) { body(o, is); });
    }
  });
});

// ---- Mod

// fmod = 0: the remainder takes the divisor's sign (Python's %); fmod = 1: the dividend's (C's %).
// A divisor of -1 gives 0 (INT_MIN % -1 would trap).
template <typename T, bool Fmod>
struct IntMod {
  T operator()(T a, T b) const {
    if (b == -1) return 0;
    T r = a % b;
    if constexpr (!Fmod) {
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
    }
    return r;
  }
};

template <typename T, bool Fmod>
std::unique_ptr<Kernel> intModKernel(const KernelSpec& spec) {
  return makeKernel([d = spec.description](const KernelIO& io) {
    requireNoZeroDivisor<T>(d, io.in(1));
    broadcastBinary<T, T, T>(io.in(0), io.in(1), io.out(0), IntMod<T, Fmod>{});
  });
}

XT_REGISTER_KERNEL("ai.onnx", "Mod", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType t = spec.outputs.at(0).dataType();
  const bool fmod = spec.attrs.getInt("fmod", 0) != 0;
  switch (t) {
    case DataType::FLOAT:
      if (!fmod) {  // Python's %: C's fmod moved into the divisor's sign (PopART's float Mod)
        return makeKernel([](const KernelIO& io) {
          broadcastBinary<float, float, float>(io.in(0), io.in(1), io.out(0), [](float a, float b) {
            const float r = std::fmod(a, b);
            return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
          });
        });
      }
      return makeKernel([](const KernelIO& io) {
        broadcastBinary<float, float, float>(io.in(0), io.in(1), io.out(0),
                                             [](float a, float b) { return std::fmod(a, b); });
      });
    case DataType::INT32:
      return fmod ? intModKernel<int32_t, true>(spec) : intModKernel<int32_t, false>(spec);
    case DataType::INT64:
      return fmod ? intModKernel<int64_t, true>(spec) : intModKernel<int64_t, false>(spec);
    default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
  }
});

// ---- Where

// Copies elements by their size, so it serves every element type (FLOAT16 too, unconverted).
template <typename T>
void whereTyped(const KernelIO& io) {
  const HostTensor& c = io.in(0);
  const HostTensor& x = io.in(1);
  const HostTensor& y = io.in(2);
  HostTensor& out = io.out(0);
  const uint8_t* pc = elems<uint8_t>(c);
  const T* px = elems<T>(x);
  const T* py = elems<T>(y);
  T* po = elems<T>(out);
  const Shape& s = out.shape();
  const int64_t n = out.nelms();
  if (c.shape() == s && x.shape() == s && y.shape() == s) {
    for (int64_t i = 0; i < n; ++i) {
      const T a = px[i], b = py[i];
      po[i] = pc[i] ? a : b;
    }
  } else if (c.shape() == s && x.shape() == s && y.nelms() == 1) {
    const T v = py[0];
    for (int64_t i = 0; i < n; ++i) {
      const T a = px[i];
      po[i] = pc[i] ? a : v;
    }
  } else if (c.shape() == s && y.shape() == s && x.nelms() == 1) {
    const T v = px[0];
    for (int64_t i = 0; i < n; ++i) {
      const T b = py[i];
      po[i] = pc[i] ? v : b;
    }
  } else {
    forEachBroadcast3(s, broadcastStrides(c.shape(), s), broadcastStrides(x.shape(), s),
                      broadcastStrides(y.shape(), s),
                      [&](int64_t o, int64_t ic, int64_t ix, int64_t iy) {
                        const T a = px[ix], b = py[iy];
                        po[o] = pc[ic] ? a : b;
                      });
  }
}

XT_REGISTER_KERNEL("ai.onnx", "Where", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  if (spec.inputs.at(0).dataType() != DataType::BOOL) {
    spec.fail("condition is {}, expected BOOL", spec.inputs[0].toString());
  }
  const DataType t = spec.outputs.at(0).dataType();
  switch (dataTypeSize(t)) {
    case 1: return makeKernel(whereTyped<uint8_t>);
    case 2: return makeKernel(whereTyped<uint16_t>);
    case 4: return makeKernel(whereTyped<uint32_t>);
    case 8: return makeKernel(whereTyped<uint64_t>);
    default: spec.fail("element type {} is not supported", dataTypeName(t));
  }
});

// ---- Comparisons and logical ops

template <typename Cmp>
KernelFactory comparison(Cmp cmp, bool allowBool) {
  return [cmp, allowBool](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const DataType t = spec.inputs.at(0).dataType();
    if (spec.inputs.at(1).dataType() != t) {
      spec.fail("inputs are {} and {}, expected one type", spec.inputs[0].toString(),
                spec.inputs[1].toString());
    }
    auto run = [cmp]<typename T>(const KernelIO& io, T) {
      broadcastBinary<T, T, uint8_t>(io.in(0), io.in(1), io.out(0), [cmp](T a, T b) {
        return static_cast<uint8_t>(cmp(a, b) ? 1 : 0);
      });
    };
    switch (t) {
      case DataType::FLOAT: return makeKernel([run](const KernelIO& io) { run(io, 0.0f); });
      case DataType::INT32: return makeKernel([run](const KernelIO& io) { run(io, int32_t{0}); });
      case DataType::INT64: return makeKernel([run](const KernelIO& io) { run(io, int64_t{0}); });
      case DataType::BOOL:
        if (allowBool) return makeKernel([run](const KernelIO& io) { run(io, uint8_t{0}); });
        [[fallthrough]];
      default:
        spec.fail("element type {} is not supported (FLOAT, INT32, INT64{})", dataTypeName(t),
                  allowBool ? ", BOOL" : "");
    }
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Equal", comparison([](auto a, auto b) { return a == b; }, true));
XT_REGISTER_KERNEL("ai.onnx", "Less", comparison([](auto a, auto b) { return a < b; }, false));
XT_REGISTER_KERNEL("ai.onnx", "LessOrEqual",
                   comparison([](auto a, auto b) { return a <= b; }, false));
XT_REGISTER_KERNEL("ai.onnx", "Greater", comparison([](auto a, auto b) { return a > b; }, false));
XT_REGISTER_KERNEL("ai.onnx", "GreaterOrEqual",
                   comparison([](auto a, auto b) { return a >= b; }, false));

template <typename Op>
KernelFactory logical(Op op) {
  return [op](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    for (size_t i = 0; i < 2; ++i) {
      if (spec.inputs.at(i).dataType() != DataType::BOOL) {
        spec.fail("input {} is {}, expected BOOL", i, spec.inputs[i].toString());
      }
    }
    return makeKernel([op](const KernelIO& io) {
      broadcastBinary<uint8_t, uint8_t, uint8_t>(
          io.in(0), io.in(1), io.out(0),
          [op](uint8_t a, uint8_t b) { return static_cast<uint8_t>(op(a != 0, b != 0) ? 1 : 0); });
    });
  };
}

XT_REGISTER_KERNEL("ai.onnx", "And", logical([](bool a, bool b) { return a && b; }));
XT_REGISTER_KERNEL("ai.onnx", "Or", logical([](bool a, bool b) { return a || b; }));
XT_REGISTER_KERNEL("ai.onnx", "Xor", logical([](bool a, bool b) { return a != b; }));

XT_REGISTER_KERNEL("ai.onnx", "Not", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  if (spec.inputs.at(0).dataType() != DataType::BOOL) {
    spec.fail("input 0 is {}, expected BOOL", spec.inputs[0].toString());
  }
  return makeKernel([](const KernelIO& io) {
    const uint8_t* __restrict x = elems<uint8_t>(io.in(0));
    uint8_t* __restrict y = elems<uint8_t>(io.out(0));
    const int64_t n = io.out(0).nelms();
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] == 0 ? 1 : 0;
  });
});

}  // namespace
}  // namespace xtrain::device
