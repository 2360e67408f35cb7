#include "comm/reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

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

}  // namespace

void reduceInto(DataType type, CollectiveOperator op, const void* const* srcs, size_t numSrcs,
                void* const* dsts, size_t numDsts, size_t count) {
  XT_CHECK_GT(numSrcs, size_t{0}, "reduceInto needs at least one source");
  if (count == 0) return;
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
