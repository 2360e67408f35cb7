// Views over user memory used to pass data in and out of a session (PopART's IArray /
// NDArrayWrapper). The wrapper never owns or copies the memory; it must outlive the call that uses
// it.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/error.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain {

class XTRAIN_API IArray {
 public:
  virtual ~IArray() = default;
  virtual void* data() = 0;
  virtual DataType dataType() const = 0;
  virtual size_t rank() const = 0;
  virtual int64_t dim(size_t index) const = 0;
  virtual size_t nelms() const = 0;
  virtual const Shape shape() const = 0;
};

template <typename T>
constexpr DataType dataTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::FLOAT;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::DOUBLE;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DataType::INT64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::INT32;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DataType::INT16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DataType::INT8;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DataType::UINT64;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DataType::UINT32;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DataType::FLOAT16;  // half stored as uint16_t
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DataType::UINT8;
  else if constexpr (std::is_same_v<T, bool>)
    return DataType::BOOL;
  else
    static_assert(sizeof(T) == 0, "no xtrain DataType for this element type");
}

template <typename T>
class XTRAIN_API NDArrayWrapper : public IArray {
 public:
  NDArrayWrapper(T* data, const TensorInfo& info) : data_(data), shape_(info.shape()) {
    if (info.dataType() != dataTypeOf<T>()) {
      throw error("NDArrayWrapper: TensorInfo {} does not match the element type {} of the buffer",
                  info.toString(), dataTypeName(dataTypeOf<T>()));
    }
  }
  NDArrayWrapper(T* data, const Shape& shape) : data_(data), shape_(shape) {}

  void* data() override { return data_; }
  T* typedData() { return data_; }
  DataType dataType() const override { return dataTypeOf<T>(); }
  size_t rank() const override { return shape_.size(); }
  int64_t dim(size_t index) const override { return shape_.at(index); }
  size_t nelms() const override {
    size_t n = 1;
    for (auto d : shape_) n *= static_cast<size_t>(d);
    return n;
  }
  const Shape shape() const override { return shape_; }

 private:
  T* data_;
  Shape shape_;
};

}  // namespace xtrain
