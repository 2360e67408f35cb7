#include "xtrain/tensorinfo.hpp"

#include "common/checked_math.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

TensorInfo::TensorInfo(DataType type, Shape shape) {
  set(type, std::move(shape));
}
TensorInfo::TensorInfo(const std::string& type, Shape shape) {
  set(dataTypeFromName(type), std::move(shape));
}

void TensorInfo::set(DataType type, Shape shape) {
  for (auto d : shape) {
    if (d < 0) throw error("tensor shape {} has a negative dimension", shapeToString(shape));
  }
  // Every tensor's size in bytes fits in int64_t, so nelms() and nbytes() never wrap.
  const int64_t elements = shapeNelms(shape);
  checkedMul("the size in bytes of a " + std::string(dataTypeName(type)) + shapeToString(shape) +
                 " tensor",
             elements, static_cast<int64_t>(dataTypeSize(type)));
  type_ = type;
  shape_ = std::move(shape);
}

int64_t TensorInfo::dim(int64_t i) const {
  const int64_t r = rank();
  const int64_t k = i < 0 ? i + r : i;
  if (k < 0 || k >= r) throw error("dimension {} is out of range for {}", i, toString());
  return shape_[static_cast<size_t>(k)];
}

int64_t TensorInfo::nelms() const {
  return shapeNelms(shape_);
}
int64_t TensorInfo::nbytes() const {
  return nelms() * static_cast<int64_t>(dataTypeSize(type_));
}

std::string TensorInfo::toString() const {
  return std::string(dataTypeName(type_)) + shapeToString(shape_);
}

std::string shapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t shapeNelms(const Shape& shape) {
  int64_t n = 1;
  for (auto d : shape) {
    if (d == 0) return 0;
  }
  for (auto d : shape) {
    if (d < 0) throw error("tensor shape {} has a negative dimension", shapeToString(shape));
    if (__builtin_mul_overflow(n, d, &n)) {
      throw size_overflow_error("the element count of shape {} overflows 64 bits",
                                shapeToString(shape));
    }
  }
  return n;
}

std::ostream& operator<<(std::ostream& os, const TensorInfo& info) {
  return os << info.toString();
}

}  // namespace xtrain
