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

// An index tensor as int64_t, converted once per run (no per-element dispatch): INT64, INT32 or
// UINT32, the index types the ops' shape checks admit (ir/ops/indexing.hpp).
inline void readIndexTensor(const HostTensor& t, std::vector<int64_t>& out) {
  const auto n = static_cast<size_t>(t.nelms());
  out.resize(n);
  auto copy = [&](const auto* p) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(p[i]);
  };
  switch (t.dataType()) {
    case DataType::INT64: copy(t.data<int64_t>()); break;
    case DataType::INT32: copy(t.data<int32_t>()); break;
    case DataType::UINT32: copy(t.data<uint32_t>()); break;
    default:
      throw internal_error("readIndexTensor: indices of type {} (INT64, INT32 or UINT32 expected)",
                           dataTypeName(t.dataType()));
  }
}

}  // namespace xtrain::device::copyutil

#pragma GCC visibility pop
