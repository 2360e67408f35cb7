#include "checkpoint/h5_types.hpp"

#include <array>
#include <bit>
#include <cstdint>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::checkpoint {

// Host tensors are read and written without conversion, using the little-endian file types as
// memory types; a big-endian host would need native memory types instead.
static_assert(std::endian::native == std::endian::little,
              "checkpoint I/O assumes a little-endian host");

namespace {

H5Handle copyOf(hid_t type) {
  return ownType(H5Tcopy(type));
}

// A 16-bit IEEE-style float with the given exponent and mantissa widths (FLOAT16: 5/10, BFLOAT16:
// 8/7). Built from the 32-bit type as HDF5 has no predefined half types before 1.14.
H5Handle float16Type(size_t exponentBits, size_t mantissaBits, size_t bias) {
  H5Handle t = copyOf(H5T_IEEE_F32LE);
  H5Tset_fields(t.get(), 15, mantissaBits, exponentBits, 0, mantissaBits);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), bias);
  return t;
}

// h5py's convention for complex numbers: a compound of "r" and "i".
H5Handle complexType(hid_t part, size_t partSize) {
  H5Handle t = ownType(H5Tcreate(H5T_COMPOUND, 2 * partSize));
  H5Tinsert(t.get(), "r", 0, part);
  H5Tinsert(t.get(), "i", partSize, part);
  return t;
}

// h5py's convention for booleans: an 8-bit enum FALSE = 0, TRUE = 1.
H5Handle boolType() {
  H5Handle t = ownType(H5Tenum_create(H5T_STD_I8LE));
  const int8_t no = 0, yes = 1;
  H5Tenum_insert(t.get(), "FALSE", &no);
  H5Tenum_insert(t.get(), "TRUE", &yes);
  return t;
}

// Formats with no HDF5 or NumPy equivalent are stored as tagged opaque bytes.
H5Handle opaqueType(const char* tag) {
  H5Handle t = ownType(H5Tcreate(H5T_OPAQUE, 1));
  H5Tset_tag(t.get(), tag);
  return t;
}

constexpr std::array kStorable = {
    DataType::UINT8,      DataType::INT8,       DataType::UINT16,  DataType::INT16,
    DataType::INT32,      DataType::INT64,      DataType::UINT32,  DataType::UINT64,
    DataType::BOOL,       DataType::FLOAT,      DataType::FLOAT16, DataType::BFLOAT16,
    DataType::FLOAT8_143, DataType::FLOAT8_152, DataType::DOUBLE,  DataType::COMPLEX64,
    DataType::COMPLEX128,
};

}  // namespace

H5Handle hdf5TypeOf(DataType type) {
  switch (type) {
    case DataType::UINT8: return copyOf(H5T_STD_U8LE);
    case DataType::INT8: return copyOf(H5T_STD_I8LE);
    case DataType::UINT16: return copyOf(H5T_STD_U16LE);
    case DataType::INT16: return copyOf(H5T_STD_I16LE);
    case DataType::INT32: return copyOf(H5T_STD_I32LE);
    case DataType::INT64: return copyOf(H5T_STD_I64LE);
    case DataType::UINT32: return copyOf(H5T_STD_U32LE);
    case DataType::UINT64: return copyOf(H5T_STD_U64LE);
    case DataType::BOOL: return boolType();
    case DataType::FLOAT: return copyOf(H5T_IEEE_F32LE);
    case DataType::DOUBLE: return copyOf(H5T_IEEE_F64LE);
    case DataType::FLOAT16: return float16Type(5, 10, 15);
    case DataType::BFLOAT16: return float16Type(8, 7, 127);
    case DataType::FLOAT8_143: return opaqueType("xtrain.FLOAT8_143");
    case DataType::FLOAT8_152: return opaqueType("xtrain.FLOAT8_152");
    case DataType::COMPLEX64: return complexType(H5T_IEEE_F32LE, 4);
    case DataType::COMPLEX128: return complexType(H5T_IEEE_F64LE, 8);
    case DataType::STRING:
    case DataType::UNDEFINED: break;
  }
  throw CheckpointError("tensors of type {} cannot be stored in a checkpoint", dataTypeName(type));
}

std::optional<DataType> dataTypeOfHdf5(hid_t type) {
  for (DataType candidate : kStorable) {
    if (H5Tequal(type, hdf5TypeOf(candidate).get()) > 0) return candidate;
  }
  return std::nullopt;
}

}  // namespace xtrain::checkpoint
