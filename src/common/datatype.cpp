#include "xtrain/datatype.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain {

namespace {
struct TypeRow {
  DataType type;
  const char* name;
  size_t size;
  int onnx;  // ONNX TensorProto.DataType
};

constexpr std::array<TypeRow, 19> kTypes = {{
    {DataType::UINT8, "UINT8", 1, 2},
    {DataType::INT8, "INT8", 1, 3},
    {DataType::UINT16, "UINT16", 2, 4},
    {DataType::INT16, "INT16", 2, 5},
    {DataType::INT32, "INT32", 4, 6},
    {DataType::INT64, "INT64", 8, 7},
    {DataType::UINT32, "UINT32", 4, 12},
    {DataType::UINT64, "UINT64", 8, 13},
    {DataType::BOOL, "BOOL", 1, 9},
    {DataType::FLOAT, "FLOAT", 4, 1},
    {DataType::FLOAT16, "FLOAT16", 2, 10},
    {DataType::BFLOAT16, "BFLOAT16", 2, 16},
    {DataType::FLOAT8_143, "FLOAT8_143", 1, -1},
    {DataType::FLOAT8_152, "FLOAT8_152", 1, -2},
    {DataType::DOUBLE, "DOUBLE", 8, 11},
    {DataType::COMPLEX64, "COMPLEX64", 8, 14},
    {DataType::COMPLEX128, "COMPLEX128", 16, 15},
    {DataType::STRING, "STRING", 0, 8},
    {DataType::UNDEFINED, "UNDEFINED", 0, 0},
}};

const TypeRow& row(DataType t) {
  for (const auto& r : kTypes) {
    if (r.type == t) return r;
  }
  throw internal_error("unknown DataType value {}", static_cast<int>(t));
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}
}  // namespace

size_t dataTypeSize(DataType t) { return row(t).size; }
const char* dataTypeName(DataType t) { return row(t).name; }

DataType dataTypeFromName(std::string_view name) {
  const std::string u = upper(name);
  for (const auto& r : kTypes) {
    if (u == r.name) return r.type;
  }
  if (u == "FLOAT32") return DataType::FLOAT;
  if (u == "FLOAT64") return DataType::DOUBLE;
  if (u == "HALF") return DataType::FLOAT16;
  throw error("unknown data type '{}' (expected one of FLOAT, FLOAT16, INT32, INT64, ...)", name);
}

int dataTypeToOnnx(DataType t) {
  const auto& r = row(t);
  if (r.onnx < 0) {
    throw error("data type {} has no ONNX equivalent in the supported opsets", r.name);
  }
  return r.onnx;
}

DataType dataTypeFromOnnx(int onnxType) {
  for (const auto& r : kTypes) {
    if (r.onnx == onnxType && onnxType >= 0) return r.type;
  }
  throw error("unsupported ONNX tensor element type {}", onnxType);
}

bool isFloatingPoint(DataType t) {
  switch (t) {
    case DataType::FLOAT:
    case DataType::FLOAT16:
    case DataType::BFLOAT16:
    case DataType::FLOAT8_143:
    case DataType::FLOAT8_152:
    case DataType::DOUBLE: return true;
    default: return false;
  }
}

bool isInteger(DataType t) {
  switch (t) {
    case DataType::UINT8:
    case DataType::INT8:
    case DataType::UINT16:
    case DataType::INT16:
    case DataType::INT32:
    case DataType::INT64:
    case DataType::UINT32:
    case DataType::UINT64: return true;
    default: return false;
  }
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {                                                // subnormal or zero
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t mant = (absx & 0x007fffffu) | 0x00800000u;
    const int shift = 113 - static_cast<int>(absx >> 23) + 13;  // 126 - exp + 13 - 14 + ...
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((absx - 0x38000000u) >> 13);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace xtrain
