// Untyped views of tensor data passed across the API: ConstVoidData (read) and MutableVoidData
// (write).
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/error.hpp"
#include "xtrain/ndarraywrapper.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain {

// A tensor value: data (host memory in the layout of info) and its type and shape. `data` is not
// owned unless the value was made with store() or fromVector(); it must stay valid until the call
// that takes the ConstVoidData returns (callees copy it).
struct XTRAIN_API ConstVoidData {
  ConstVoidData() = default;
  ConstVoidData(const void* d, const TensorInfo& i) : data(d), info(i) {}

  // Keeps `bytes` (shared by copies of this ConstVoidData) and points data at them.
  void store(std::vector<char>&& bytes, const TensorInfo& i) {
    storage_ = std::make_shared<const std::vector<char>>(std::move(bytes));
    data = storage_->data();
    info = i;
  }

  // An owning copy of `values` with the given shape.
  template <typename T>
  static ConstVoidData fromVector(const Shape& shape, const std::vector<T>& values) {
    const TensorInfo i(dataTypeOf<T>(), shape);
    if (static_cast<int64_t>(values.size()) != i.nelms()) {
      throw error("ConstVoidData::fromVector: {} values given for shape {} ({} elements)",
                  values.size(), shapeToString(shape), i.nelms());
    }
    std::vector<char> bytes(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    ConstVoidData c;
    c.store(std::move(bytes), i);
    return c;
  }

  const void* data = nullptr;
  TensorInfo info;

 private:
  std::shared_ptr<const std::vector<char>> storage_;
};

struct XTRAIN_API MutableVoidData {
  MutableVoidData() = default;
  MutableVoidData(void* d, const TensorInfo& i) : data(d), info(i) {}
  void* data = nullptr;
  TensorInfo info;
};

}  // namespace xtrain
