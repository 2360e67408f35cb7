#include "checkpoint/dataset_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::checkpoint {

hid_t memoryTypeOf(DataType type) {
  switch (type) {
    case DataType::FLOAT: return H5T_NATIVE_FLOAT;
    case DataType::DOUBLE: return H5T_NATIVE_DOUBLE;
    case DataType::INT32: return H5T_NATIVE_INT32;
    case DataType::INT64: return H5T_NATIVE_INT64;
    case DataType::INT16: return H5T_NATIVE_INT16;
    case DataType::INT8: return H5T_NATIVE_INT8;
    case DataType::UINT8: return H5T_NATIVE_UINT8;
    case DataType::UINT16: return H5T_NATIVE_UINT16;
    case DataType::UINT32: return H5T_NATIVE_UINT32;
    case DataType::UINT64: return H5T_NATIVE_UINT64;
    case DataType::BOOL: return H5T_NATIVE_UINT8;
    default: throw error("HDF5 data of type {} is not supported", dataTypeName(type));
  }
}

namespace {

// HDF5 calls this for each value its conversion cannot carry over: out of the target's range, or
// an infinity or NaN bound for an integer. Returning UNHANDLED keeps HDF5's own result (a clamped
// integer, an infinity), which the reader then checks against the stored values.
H5T_conv_ret_t watchRange(H5T_conv_except_t except, hid_t, hid_t, void*, void*, void* outOfRange) {
  switch (except) {
    case H5T_CONV_EXCEPT_RANGE_HI:
    case H5T_CONV_EXCEPT_RANGE_LOW:
    case H5T_CONV_EXCEPT_PINF:
    case H5T_CONV_EXCEPT_NINF:
    case H5T_CONV_EXCEPT_NAN: *static_cast<bool*>(outOfRange) = true; break;
    default: break;  // precision lost (int64 to float) or a fraction truncated: as HDF5 does
  }
  return H5T_CONV_UNHANDLED;
}

// Whether `v` (of a stored type S) is carried over exactly by a conversion to `target`, up to the
// precision of a floating-point target.
template <typename T, typename S>
bool fitsIn(S v) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (std::is_floating_point_v<S>) {
      // Infinities and NaN stay what they are; a finite value must stay finite.
      return !std::isfinite(v) || std::fabs(static_cast<long double>(v)) <=
                                      static_cast<long double>(std::numeric_limits<T>::max());
    } else {
      return true;  // every integer up to 64 bits is below FLT_MAX
    }
  } else if constexpr (std::is_floating_point_v<S>) {
    const auto lv = static_cast<long double>(v);
    return std::isfinite(v) && lv > static_cast<long double>(std::numeric_limits<T>::min()) - 1 &&
           lv < static_cast<long double>(std::numeric_limits<T>::max()) + 1;
  } else {
    return std::in_range<T>(v);
  }
}

template <typename S>
bool fitsIn(S v, DataType target) {
  switch (target) {
    case DataType::FLOAT: return fitsIn<float>(v);
    case DataType::DOUBLE: return fitsIn<double>(v);
    case DataType::INT8: return fitsIn<int8_t>(v);
    case DataType::INT16: return fitsIn<int16_t>(v);
    case DataType::INT32: return fitsIn<int32_t>(v);
    case DataType::INT64: return fitsIn<int64_t>(v);
    case DataType::UINT8:
    case DataType::BOOL: return fitsIn<uint8_t>(v);
    case DataType::UINT16: return fitsIn<uint16_t>(v);
    case DataType::UINT32: return fitsIn<uint32_t>(v);
    case DataType::UINT64: return fitsIn<uint64_t>(v);
    default: return true;
  }
}

struct Misfit {
  size_t index = 0;   // flat, from the run's first element
  std::string value;  // as stored
};

template <typename S>
std::optional<Misfit> firstMisfit(const std::vector<unsigned char>& bytes, DataType target) {
  const size_t n = bytes.size() / sizeof(S);
  for (size_t i = 0; i < n; ++i) {
    S v;
    std::memcpy(&v, bytes.data() + i * sizeof(S), sizeof(S));
    if (!fitsIn(v, target)) return Misfit{i, format("{}", v)};
  }
  return std::nullopt;
}

std::optional<Misfit> firstMisfit(const std::vector<unsigned char>& bytes, DataType stored,
                                  DataType target) {
  switch (stored) {
    case DataType::FLOAT: return firstMisfit<float>(bytes, target);
    case DataType::DOUBLE: return firstMisfit<double>(bytes, target);
    case DataType::INT8: return firstMisfit<int8_t>(bytes, target);
    case DataType::INT16: return firstMisfit<int16_t>(bytes, target);
    case DataType::INT32: return firstMisfit<int32_t>(bytes, target);
    case DataType::INT64: return firstMisfit<int64_t>(bytes, target);
    case DataType::UINT8: return firstMisfit<uint8_t>(bytes, target);
    case DataType::UINT16: return firstMisfit<uint16_t>(bytes, target);
    case DataType::UINT32: return firstMisfit<uint32_t>(bytes, target);
    case DataType::UINT64: return firstMisfit<uint64_t>(bytes, target);
    default: return std::nullopt;
  }
}

}  // namespace

SampleRunReader::SampleRunReader(hid_t ds, const TensorInfo& full, DataType type, std::string where)
    : ds_(ds), full_(full), type_(type), where_(std::move(where)) {
  const int64_t samples = full.shape()[0];
  sampleElements_ = samples == 0 ? 0 : full.nelms() / samples;
  transfer_ = H5Handle(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (!transfer_.valid() || H5Pset_type_conv_cb(transfer_.get(), watchRange, &outOfRange_) < 0) {
    throw error("{}: cannot set up reading it", where_);
  }
}

void SampleRunReader::read(hid_t memSpace, hid_t fileSpace, int64_t first, int64_t count,
                           void* dst) {
  if (full_.dataType() == DataType::BOOL) {
    readBool(memSpace, fileSpace, first, count, dst);
    return;
  }
  outOfRange_ = false;
  if (H5Dread(ds_, memoryTypeOf(type_), memSpace, fileSpace, transfer_.get(), dst) < 0) {
    readFailed(first, count);
  }
  if (outOfRange_) refuseValuesThatDoNotFit(memSpace, fileSpace, first, count);
}

void SampleRunReader::readBool(hid_t memSpace, hid_t fileSpace, int64_t first, int64_t count,
                               void* dst) {
  // Read as the file's own 1-byte enum, so HDF5 copies the bytes as they are (an enum converts to
  // nothing but another enum); then each must be FALSE (0) or TRUE (1).
  const H5Handle fileType(H5Dget_type(ds_), H5Tclose);
  const size_t n = static_cast<size_t>(count * sampleElements_);
  const size_t targetSize = dataTypeSize(type_);
  std::vector<unsigned char> bytes(n * std::max<size_t>(targetSize, 1));
  if (!fileType.valid() ||
      H5Dread(ds_, fileType.get(), memSpace, fileSpace, H5P_DEFAULT, bytes.data()) < 0) {
    readFailed(first, count);
  }
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] > 1) {
      const auto e = static_cast<int64_t>(i);
      throw error(
          "{}: sample {} holds {} (element {} of the sample), which is not a boolean: h5py's bool "
          "type holds FALSE (0) and TRUE (1) only; the file is damaged or was written as raw "
          "bytes",
          where_, first + e / sampleElements_, static_cast<int>(bytes[i]), e % sampleElements_);
    }
  }
  const hid_t target = memoryTypeOf(type_);
  if (H5Tget_size(target) != 1 &&
      H5Tconvert(H5T_NATIVE_UINT8, target, n, bytes.data(), nullptr, H5P_DEFAULT) < 0) {
    throw error("{}: cannot convert its booleans to {}", where_, dataTypeName(type_));
  }
  std::memcpy(dst, bytes.data(), n * targetSize);
}

void SampleRunReader::refuseValuesThatDoNotFit(hid_t memSpace, hid_t fileSpace, int64_t first,
                                               int64_t count) {
  const DataType stored = full_.dataType();
  // FLOAT16 is read as FLOAT, which holds every half value.
  const DataType asRead = stored == DataType::FLOAT16 ? DataType::FLOAT : stored;
  const size_t n = static_cast<size_t>(count * sampleElements_);
  std::vector<unsigned char> bytes(n * dataTypeSize(asRead));
  if (H5Dread(ds_, memoryTypeOf(asRead), memSpace, fileSpace, H5P_DEFAULT, bytes.data()) < 0) {
    readFailed(first, count);
  }
  const std::optional<Misfit> misfit = firstMisfit(bytes, asRead, type_);
  if (!misfit) return;
  const auto e = static_cast<int64_t>(misfit->index);
  throw error(
      "{}: sample {} holds {} (element {} of the sample, stored as {}), which does not fit in "
      "{}, the type it is read as",
      where_, first + e / sampleElements_, misfit->value, e % sampleElements_, dataTypeName(stored),
      dataTypeName(type_));
}

void SampleRunReader::readFailed(int64_t first, int64_t count) const {
  const std::string detail = hdf5ErrorDetail();
  throw error("{}: reading samples {}..{} failed: the file is corrupt or truncated{}", where_,
              first, first + count - 1, detail.empty() ? "" : " (HDF5: " + detail + ")");
}

}  // namespace xtrain::checkpoint
