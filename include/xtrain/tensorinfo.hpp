// TensorInfo: the element type and shape of a tensor.
#pragma once

#include <ostream>
#include <string>

#include "xtrain/api.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/names.hpp"

namespace xtrain {

class XTRAIN_API TensorInfo {
 public:
  TensorInfo() = default;
  TensorInfo(DataType type, Shape shape);
  // PopART also spells the type as a string: TensorInfo("FLOAT", {2, 3}).
  TensorInfo(const std::string& type, Shape shape);

  DataType dataType() const { return type_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  // Dimension i; negative i counts from the end. Throws xtrain::error when out of range.
  int64_t dim(int64_t i) const;
  int64_t nelms() const;
  int64_t nbytes() const;
  bool isSet() const { return type_ != DataType::UNDEFINED; }

  void set(DataType type, Shape shape);
  bool operator==(const TensorInfo& other) const = default;
  // "FLOAT[2,3]"
  std::string toString() const;

 private:
  DataType type_ = DataType::UNDEFINED;
  Shape shape_;
};

XTRAIN_API std::string shapeToString(const Shape& shape);
XTRAIN_API int64_t shapeNelms(const Shape& shape);
XTRAIN_API std::ostream& operator<<(std::ostream& os, const TensorInfo& info);

}  // namespace xtrain
