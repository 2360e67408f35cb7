// Helpers for kernels that move elements without computing on them: pick an integer type of the
// element's byte size so loops copy whole elements whatever the element type.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <memory>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device::copyutil {

// A trivially copyable element of N bytes, for element sizes without a matching integer type.
template <size_t N>
struct Bytes {
  unsigned char b[N];
};

// Calls f(T{}) with an element type of the given byte size.
template <typename F>
auto bySize(const KernelSpec& spec, size_t esize, F&& f) -> decltype(f(uint8_t{})) {
  switch (esize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16: return f(Bytes<16>{});
    default: spec.fail("element size {} bytes is not supported by this kernel", esize);
  }
}

inline size_t elementSize(const KernelSpec& spec, const TensorInfo& info) {
  const size_t esize = dataTypeSize(info.dataType());
  if (esize == 0) spec.fail("element type of {} cannot be copied", info.toString());
  return esize;
}

// Row-major strides of a shape (in elements).
inline std::vector<int64_t> stridesOf(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Reads element i of an integer index tensor (INT32 or INT64) without per-element dispatch: the
// caller converts the whole tensor once with readIndexTensor.
inline void readIndexTensor(const HostTensor& t, std::vector<int64_t>& out) {
  const auto n = static_cast<size_t>(t.nelms());
  out.resize(n);
  if (t.dataType() == DataType::INT64) {
    const int64_t* p = t.data<int64_t>();
    for (size_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < n; ++i) out[i] = p[i];
  }
}

}  // namespace xtrain::device::copyutil

#pragma GCC visibility pop
