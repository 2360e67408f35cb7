#include "common/host_tensor.hpp"

#include <cstdint>
#include <cstdlib>

namespace xtrain {

namespace {
constexpr size_t kAlignment = 64;

std::shared_ptr<std::byte> allocateAligned(size_t bytes) {
  size_t rounded = ((bytes + kAlignment - 1) / kAlignment) * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw error("out of host memory allocating {} bytes", bytes);
  std::memset(p, 0, rounded);
  return {static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); }};
}
}  // namespace

HostTensor::HostTensor(const TensorInfo& info)
    : info_(info), bytes_(static_cast<size_t>(info.nbytes())), data_(allocateAligned(bytes_)) {}

HostTensor::HostTensor(const HostTensor& other) : HostTensor(other.info_) {
  if (bytes_ != 0) std::memcpy(data_.get(), other.data_.get(), bytes_);
}

HostTensor HostTensor::view(const TensorInfo& info, std::byte* data, std::shared_ptr<void> owner) {
  XT_CHECK(reinterpret_cast<uintptr_t>(data) % kAlignment == 0, "view of {} at unaligned {}",
           info.toString(), static_cast<const void*>(data));
  HostTensor t;
  t.info_ = info;
  t.bytes_ = static_cast<size_t>(info.nbytes());
  t.data_ = std::shared_ptr<std::byte>(std::move(owner), data);
  t.view_ = true;
  return t;
}

HostTensor& HostTensor::operator=(const HostTensor& other) {
  if (view_ && data_ && bytes_ == other.bytes_) {
    // Into the borrowed bytes, so that every tensor sharing them sees the value.
    if (this != &other && bytes_ != 0) std::memmove(data_.get(), other.data_.get(), bytes_);
    info_ = other.info_;
    return *this;
  }
  if (this != &other) {
    HostTensor copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void HostTensor::reshape(const Shape& shape) {
  XT_CHECK_EQ(shapeNelms(shape), info_.nelms(), "reshape {} to {}", info_.toString(),
              shapeToString(shape));
  info_ = TensorInfo(info_.dataType(), shape);
}

void HostTensor::fillZero() {
  if (bytes_ != 0) std::memset(data_.get(), 0, bytes_);
}

void HostTensor::fill(double value) {
  for (int64_t i = 0; i < nelms(); ++i) setFromDouble(i, value);
}

double HostTensor::getAsDouble(int64_t i) const {
  const std::byte* p = data_.get();
  switch (info_.dataType()) {
    case DataType::FLOAT: return reinterpret_cast<const float*>(p)[i];
    case DataType::DOUBLE: return reinterpret_cast<const double*>(p)[i];
    case DataType::FLOAT16: return halfToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    case DataType::INT64: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DataType::INT32: return reinterpret_cast<const int32_t*>(p)[i];
    case DataType::INT16: return reinterpret_cast<const int16_t*>(p)[i];
    case DataType::INT8: return reinterpret_cast<const int8_t*>(p)[i];
    case DataType::UINT64: return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
    case DataType::UINT32: return reinterpret_cast<const uint32_t*>(p)[i];
    case DataType::UINT16: return reinterpret_cast<const uint16_t*>(p)[i];
    case DataType::UINT8: return reinterpret_cast<const uint8_t*>(p)[i];
    case DataType::BOOL: return reinterpret_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
    default:
      throw error("element type {} cannot be read as a number", dataTypeName(info_.dataType()));
  }
}

void HostTensor::setFromDouble(int64_t i, double v) {
  std::byte* p = data_.get();
  switch (info_.dataType()) {
    case DataType::FLOAT: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DataType::DOUBLE: reinterpret_cast<double*>(p)[i] = v; return;
    case DataType::FLOAT16:
      reinterpret_cast<uint16_t*>(p)[i] = floatToHalf(static_cast<float>(v));
      return;
    case DataType::INT64: reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); return;
    case DataType::INT32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); return;
    case DataType::INT16: reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); return;
    case DataType::INT8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); return;
    case DataType::UINT64: reinterpret_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); return;
    case DataType::UINT32: reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); return;
    case DataType::UINT16: reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); return;
    case DataType::UINT8: reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); return;
    case DataType::BOOL: reinterpret_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0; return;
    default:
      throw error("element type {} cannot be written as a number", dataTypeName(info_.dataType()));
  }
}

HostTensor HostTensor::castTo(DataType type) const {
  HostTensor out(TensorInfo(type, info_.shape()));
  if (type == info_.dataType()) {
    if (bytes_ != 0) std::memcpy(out.raw(), raw(), bytes_);
    return out;
  }
  const int64_t n = nelms();
  for (int64_t i = 0; i < n; ++i) out.setFromDouble(i, getAsDouble(i));
  return out;
}

}  // namespace xtrain
