#include "comm/reduce.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/check.hpp"

namespace xtrain::comm {

namespace {

using Op = CollectiveOperator;

struct Half {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2);

// Accumulator type: float for the floating types, int64 for the integers (wrapping arithmetic
// through uint64 so that overflow is defined).
template <typename T>
struct Acc {
  using type = int64_t;
};
template <>
struct Acc<float> {
  using type = float;
};
template <>
struct Acc<Half> {
  using type = float;
};

template <typename T>
typename Acc<T>::type load(T v) {
  return static_cast<typename Acc<T>::type>(v);
}
template <>
float load<Half>(Half v) {
  return halfToFloat(v.bits);
}

template <typename T>
T store(typename Acc<T>::type a) {
  return static_cast<T>(a);  // integers: modular (C++20)
}
template <>
Half store<Half>(float a) {
  return Half{floatToHalf(a)};
}

inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline float wrapAdd(float a, float b) {
  return a + b;
}
inline float wrapMul(float a, float b) {
  return a * b;
}

template <Op O, typename A>
inline A first(A x) {
  if constexpr (O == Op::SquareAdd) {
    return wrapMul(x, x);
  } else if constexpr (O == Op::LogicalAnd || O == Op::LogicalOr) {
    return x != A(0) ? A(1) : A(0);
  } else {
    return x;
  }
}

template <Op O, typename A>
inline A combine(A acc, A x) {
  if constexpr (O == Op::Add || O == Op::Mean) {
    return wrapAdd(acc, x);
  } else if constexpr (O == Op::SquareAdd) {
    return wrapAdd(acc, wrapMul(x, x));
  } else if constexpr (O == Op::Mul) {
    return wrapMul(acc, x);
  } else if constexpr (O == Op::Min) {
    return std::min(acc, x);
  } else if constexpr (O == Op::Max) {
    return std::max(acc, x);
  } else if constexpr (O == Op::LogicalAnd) {
    return (acc != A(0) && x != A(0)) ? A(1) : A(0);
  } else if constexpr (O == Op::LogicalOr) {
    return (acc != A(0) || x != A(0)) ? A(1) : A(0);
  } else {
    static_assert(O != Op::Local, "Local is not a reduction");
    return acc;
  }
}

template <typename T, Op O>
void reduceTyped(const void* const* srcs, size_t numSrcs, void* const* dsts, size_t numDsts,
                 size_t count) {
  using A = typename Acc<T>::type;
  constexpr size_t kChunk = 2048;  // 16 KiB of accumulators: stays in L1/L2
  A acc[kChunk];
  for (size_t base = 0; base < count; base += kChunk) {
    const size_t m = std::min(kChunk, count - base);
    const T* s0 = static_cast<const T*>(srcs[0]) + base;
    for (size_t i = 0; i < m; ++i) acc[i] = first<O>(load<T>(s0[i]));
    for (size_t p = 1; p < numSrcs; ++p) {
      const T* sp = static_cast<const T*>(srcs[p]) + base;
      for (size_t i = 0; i < m; ++i) acc[i] = combine<O>(acc[i], load<T>(sp[i]));
    }
    if constexpr (O == Op::Mean) {
      const A n = static_cast<A>(numSrcs);
      for (size_t i = 0; i < m; ++i) acc[i] = acc[i] / n;
    }
    for (size_t d = 0; d < numDsts; ++d) {
      T* dp = static_cast<T*>(dsts[d]) + base;
      for (size_t i = 0; i < m; ++i) dp[i] = store<T>(acc[i]);
    }
  }
}

template <typename T>
void reduceOp(Op op, const void* const* srcs, size_t numSrcs, void* const* dsts, size_t numDsts,
              size_t count) {
  switch (op) {
    case Op::Add: return reduceTyped<T, Op::Add>(srcs, numSrcs, dsts, numDsts, count);
    case Op::Mean: return reduceTyped<T, Op::Mean>(srcs, numSrcs, dsts, numDsts, count);
    case Op::Mul: return reduceTyped<T, Op::Mul>(srcs, numSrcs, dsts, numDsts, count);
    case Op::Min: return reduceTyped<T, Op::Min>(srcs, numSrcs, dsts, numDsts, count);
    case Op::Max: return reduceTyped<T, Op::Max>(srcs, numSrcs, dsts, numDsts, count);
    case Op::LogicalAnd: return reduceTyped<T, Op::LogicalAnd>(srcs, numSrcs, dsts, numDsts, count);
    case Op::LogicalOr: return reduceTyped<T, Op::LogicalOr>(srcs, numSrcs, dsts, numDsts, count);
    case Op::SquareAdd: return reduceTyped<T, Op::SquareAdd>(srcs, numSrcs, dsts, numDsts, count);
    case Op::Local: break;
  }
  throw internal_error("reduceInto: operator {} is not a reduction", toString(op));
}

// The FLOAT Add / Mean fast path: vector by vector, each element is still s0[i] + s1[i] + ...
// in source order (then divided by the source count for Mean), the same operations in the same
// order as the scalar loop above, so the results are bit-identical to it on every CPU. No FMA, no
// reassociation across sources. `stream` uses non-temporal stores (the destinations must share
// their alignment modulo 64: the caller checks).
inline void addFloatScalar(const float* const* s, size_t ns, float* const* d, size_t nd, size_t i,
                           size_t end, bool mean) {
  const auto n = static_cast<float>(ns);
  for (; i < end; ++i) {
    float a = s[0][i];
    for (size_t p = 1; p < ns; ++p) a = a + s[p][i];
    if (mean) a = a / n;
    for (size_t q = 0; q < nd; ++q) d[q][i] = a;
  }
}

#if defined(__x86_64__)
// Elements before d[0] reaches a 64-byte boundary (streaming stores need aligned addresses).
size_t headElems(const float* d0, size_t count) {
  const auto mis = reinterpret_cast<uintptr_t>(d0) & 63U;
  return std::min(count, mis == 0 ? size_t{0} : (64 - mis) / sizeof(float));
}

__attribute__((target("avx512f"))) void addFloatAvx512(const float* const* s, size_t ns,
                                                       float* const* d, size_t nd, size_t count,
                                                       bool mean, bool stream) {
  size_t i = stream ? headElems(d[0], count) : 0;
  addFloatScalar(s, ns, d, nd, 0, i, mean);
  const __m512 n = _mm512_set1_ps(static_cast<float>(ns));
  for (; i + 32 <= count; i += 32) {
    __m512 a = _mm512_loadu_ps(s[0] + i);
    __m512 b = _mm512_loadu_ps(s[0] + i + 16);
    for (size_t p = 1; p < ns; ++p) {
      a = _mm512_add_ps(a, _mm512_loadu_ps(s[p] + i));
      b = _mm512_add_ps(b, _mm512_loadu_ps(s[p] + i + 16));
    }
    if (mean) {
      a = _mm512_div_ps(a, n);
      b = _mm512_div_ps(b, n);
    }
    for (size_t q = 0; q < nd; ++q) {
      if (stream) {
        _mm512_stream_ps(d[q] + i, a);
        _mm512_stream_ps(d[q] + i + 16, b);
      } else {
        _mm512_storeu_ps(d[q] + i, a);
        _mm512_storeu_ps(d[q] + i + 16, b);
      }
    }
  }
  if (stream) _mm_sfence();
  addFloatScalar(s, ns, d, nd, i, count, mean);
}

__attribute__((target("avx2"))) void addFloatAvx2(const float* const* s, size_t ns, float* const* d,
                                                  size_t nd, size_t count, bool mean, bool stream) {
  size_t i = stream ? headElems(d[0], count) : 0;
  addFloatScalar(s, ns, d, nd, 0, i, mean);
  const __m256 n = _mm256_set1_ps(static_cast<float>(ns));
  for (; i + 16 <= count; i += 16) {
    __m256 a = _mm256_loadu_ps(s[0] + i);
    __m256 b = _mm256_loadu_ps(s[0] + i + 8);
    for (size_t p = 1; p < ns; ++p) {
      a = _mm256_add_ps(a, _mm256_loadu_ps(s[p] + i));
      b = _mm256_add_ps(b, _mm256_loadu_ps(s[p] + i + 8));
    }
    if (mean) {
      a = _mm256_div_ps(a, n);
      b = _mm256_div_ps(b, n);
    }
    for (size_t q = 0; q < nd; ++q) {
      if (stream) {
        _mm256_stream_ps(d[q] + i, a);
        _mm256_stream_ps(d[q] + i + 8, b);
      } else {
        _mm256_storeu_ps(d[q] + i, a);
        _mm256_storeu_ps(d[q] + i + 8, b);
      }
    }
  }
  if (stream) _mm_sfence();
  addFloatScalar(s, ns, d, nd, i, count, mean);
}
#endif

// -1: not chosen yet (the CPU decides on first use).
std::atomic<int> gKernel{-1};

ReduceKernel bestKernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return ReduceKernel::Avx512;
  if (__builtin_cpu_supports("avx2")) return ReduceKernel::Avx2;
#endif
  return ReduceKernel::Scalar;
}

// Whether the FLOAT Add/Mean fast path took the reduction.
bool addFloatFast(Op op, const void* const* srcs, size_t numSrcs, void* const* dsts, size_t numDsts,
                  size_t count, bool streaming) {
  if (op != Op::Add && op != Op::Mean) return false;
  const ReduceKernel kernel = reduceKernel();
  if (kernel == ReduceKernel::Scalar) return false;
  const auto* s = reinterpret_cast<const float* const*>(srcs);
  auto* d = reinterpret_cast<float* const*>(dsts);
  // Streaming stores need every destination at the same offset from a 64-byte line.
  for (size_t q = 0; streaming && q < numDsts; ++q) {
    if (((reinterpret_cast<uintptr_t>(d[q]) - reinterpret_cast<uintptr_t>(d[0])) & 63U) != 0 ||
        (reinterpret_cast<uintptr_t>(d[q]) & 3U) != 0) {
      streaming = false;
    }
  }
  const bool mean = op == Op::Mean;
#if defined(__x86_64__)
  if (kernel == ReduceKernel::Avx512) {
    addFloatAvx512(s, numSrcs, d, numDsts, count, mean, streaming);
    return true;
  }
  addFloatAvx2(s, numSrcs, d, numDsts, count, mean, streaming);
  return true;
#else
  (void)s, (void)d, (void)mean;
  return false;
#endif
}

}  // namespace

ReduceKernel reduceKernel() {
  int k = gKernel.load(std::memory_order_relaxed);
  if (k < 0) {
    k = static_cast<int>(bestKernel());
    gKernel.store(k, std::memory_order_relaxed);
  }
  return static_cast<ReduceKernel>(k);
}

ReduceKernel setReduceKernel(ReduceKernel kernel) {
  const ReduceKernel before = reduceKernel();
  XT_CHECK(
      static_cast<int>(kernel) >= 0 && static_cast<int>(kernel) <= static_cast<int>(bestKernel()),
      "setReduceKernel: kernel {} (0 scalar, 1 AVX2, 2 AVX-512) is not one this CPU supports "
      "(expected at most {})",
      static_cast<int>(kernel), static_cast<int>(bestKernel()));
  gKernel.store(static_cast<int>(kernel), std::memory_order_relaxed);
  return before;
}

void reduceInto(DataType type, CollectiveOperator op, const void* const* srcs, size_t numSrcs,
                void* const* dsts, size_t numDsts, size_t count, bool streaming) {
  XT_CHECK_GT(numSrcs, size_t{0}, "reduceInto needs at least one source");
  if (count == 0) return;
  if (type == DataType::FLOAT && addFloatFast(op, srcs, numSrcs, dsts, numDsts, count, streaming)) {
    return;
  }
  switch (type) {
    case DataType::FLOAT: return reduceOp<float>(op, srcs, numSrcs, dsts, numDsts, count);
    case DataType::FLOAT16: return reduceOp<Half>(op, srcs, numSrcs, dsts, numDsts, count);
    case DataType::INT32: return reduceOp<int32_t>(op, srcs, numSrcs, dsts, numDsts, count);
    case DataType::INT64: return reduceOp<int64_t>(op, srcs, numSrcs, dsts, numDsts, count);
    case DataType::UINT8: return reduceOp<uint8_t>(op, srcs, numSrcs, dsts, numDsts, count);
    default: break;
  }
  throw internal_error("reduceInto: data type {} is not reducible", dataTypeName(type));
}

}  // namespace xtrain::comm
