// DataType: PopART's element types. Kernels compute in FLOAT (and integers for indices and labels);
// FLOAT16 is a storage type converted on load and store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "xtrain/api.hpp"

namespace xtrain {

enum class DataType {
  UINT8,
  INT8,
  UINT16,
  INT16,
  INT32,
  INT64,
  UINT32,
  UINT64,
  BOOL,
  FLOAT,
  FLOAT16,
  BFLOAT16,
  FLOAT8_143,
  FLOAT8_152,
  DOUBLE,
  COMPLEX64,
  COMPLEX128,
  STRING,
  UNDEFINED,
};

// Bytes per element; 0 for STRING and UNDEFINED.
XTRAIN_API size_t dataTypeSize(DataType t);
// "FLOAT", "INT64", ...
XTRAIN_API const char* dataTypeName(DataType t);
// Parses a name as written by dataTypeName (case-insensitive); also accepts ONNX-style lower-case
// names such as "float32" or "float16". Throws xtrain::error naming the text when unknown.
XTRAIN_API DataType dataTypeFromName(std::string_view name);
// ONNX TensorProto.DataType number <-> DataType. Unknown numbers throw xtrain::error.
XTRAIN_API int dataTypeToOnnx(DataType t);
XTRAIN_API DataType dataTypeFromOnnx(int onnxType);

XTRAIN_API bool isFloatingPoint(DataType t);
XTRAIN_API bool isInteger(DataType t);

// IEEE half <-> float conversions (round to nearest even).
XTRAIN_API uint16_t floatToHalf(float f);
XTRAIN_API float halfToFloat(uint16_t h);

}  // namespace xtrain
