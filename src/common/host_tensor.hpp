// HostTensor: a tensor's value in host memory, 64-byte aligned. Used for initial values in the IR,
// device buffers, checkpoint I/O and tests. Copies are deep (and own their bytes); moves are cheap.
// A view (HostTensor::view) borrows bytes from a block that it keeps alive: the session's buffer
// plan places several tensors, one after the other, in the same memory.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "common/check.hpp"
#include "xtrain/ndarraywrapper.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain {

class HostTensor {
 public:
  HostTensor() = default;
  // Zero-initialised.
  explicit HostTensor(const TensorInfo& info);
  HostTensor(const HostTensor& other);
  HostTensor& operator=(const HostTensor& other);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;

  template <typename T>
  static HostTensor fromVector(const Shape& shape, const std::vector<T>& values) {
    HostTensor t(TensorInfo(dataTypeOf<T>(), shape));
    XT_CHECK_EQ(static_cast<int64_t>(values.size()), t.info().nelms(), "values for shape {}",
                shapeToString(shape));
    if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
    return t;
  }
  static HostTensor scalar(float v) { return fromVector<float>({}, {v}); }
  // A tensor over `info.nbytes()` borrowed bytes at `data` (64-byte aligned), which `owner` keeps
  // alive (an empty owner: the caller does). Not zeroed. Copying a view makes an owned tensor;
  // assigning to a view of the same size writes into the borrowed bytes.
  static HostTensor view(const TensorInfo& info, std::byte* data, std::shared_ptr<void> owner);
  bool isView() const { return view_; }

  const TensorInfo& info() const { return info_; }
  const Shape& shape() const { return info_.shape(); }
  DataType dataType() const { return info_.dataType(); }
  int64_t nelms() const { return info_.nelms(); }
  size_t nbytes() const { return bytes_; }

  std::byte* raw() { return data_.get(); }
  const std::byte* raw() const { return data_.get(); }

  // Typed access; checks the element type.
  template <typename T>
  T* data() {
    XT_CHECK(info_.dataType() == dataTypeOf<T>(), "HostTensor {} accessed as {}", info_.toString(),
             dataTypeName(dataTypeOf<T>()));
    return reinterpret_cast<T*>(data_.get());
  }
  template <typename T>
  const T* data() const {
    return const_cast<HostTensor*>(this)->data<T>();
  }
  template <typename T>
  std::span<T> span() {
    return {data<T>(), static_cast<size_t>(nelms())};
  }
  template <typename T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<size_t>(nelms())};
  }
  template <typename T>
  std::vector<T> toVector() const {
    auto s = span<T>();
    return {s.begin(), s.end()};
  }

  // Reinterprets the same bytes with another shape of equal element count.
  void reshape(const Shape& shape);
  void fillZero();
  // Every element set to `value` in the element type (slow: for small tensors).
  void fill(double value);

  // Element i converted to/from double, whatever the element type (slow; for tests, I/O and casts).
  double getAsDouble(int64_t i) const;
  void setFromDouble(int64_t i, double v);
  // A copy converted to another element type.
  HostTensor castTo(DataType type) const;

 private:
  TensorInfo info_;
  size_t bytes_ = 0;
  // The bytes: an aligned allocation of our own, or (a view) borrowed bytes sharing the
  // ownership of their block.
  std::shared_ptr<std::byte> data_;
  bool view_ = false;
};

}  // namespace xtrain

#pragma GCC visibility pop
