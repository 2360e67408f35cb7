#include "checkpoint/h5_types.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "xtrain/format.hpp"

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

namespace {

struct EnumMember {
  std::string name;
  uint64_t bits = 0;  // the value, as a 64-bit integer of the base's sign
  bool isSigned = false;
  std::string value() const {
    return isSigned ? std::to_string(static_cast<int64_t>(bits)) : std::to_string(bits);
  }
};

// The members of an enum whose base is an integer of at most 8 bytes, values as the base's sign
// reads them; nullopt when the type cannot be read as such.
std::optional<std::vector<EnumMember>> enumMembers(hid_t type) {
  const H5Handle base = ownType(H5Tget_super(type));
  if (!base.valid() || H5Tget_class(base.get()) != H5T_INTEGER) return std::nullopt;
  const size_t size = H5Tget_size(base.get());
  const int count = H5Tget_nmembers(type);
  // H5Tget_member_value copies the enum's own size: in a damaged file it can differ from the
  // base's, and must fit the 8 bytes below.
  if (size == 0 || size > 8 || H5Tget_size(type) != size || count < 0) return std::nullopt;
  const bool isSigned = H5Tget_sign(base.get()) == H5T_SGN_2;
  // H5Tget_member_value gives the value in the base type's layout: converted to a native long long
  // so either byte order and sign reads right.
  const H5Handle native = ownType(H5Tcopy(isSigned ? H5T_NATIVE_LLONG : H5T_NATIVE_ULLONG));
  std::vector<EnumMember> members;
  for (int i = 0; i < count; ++i) {
    char* name = H5Tget_member_name(type, static_cast<unsigned>(i));
    if (name == nullptr) return std::nullopt;
    EnumMember m{name, 0, isSigned};
    H5free_memory(name);
    std::array<unsigned char, 8> raw{};
    if (H5Tget_member_value(type, static_cast<unsigned>(i), raw.data()) < 0 ||
        H5Tconvert(base.get(), native.get(), 1, raw.data(), nullptr, H5P_DEFAULT) < 0) {
      return std::nullopt;
    }
    std::memcpy(&m.bits, raw.data(), sizeof(m.bits));
    members.push_back(std::move(m));
  }
  return members;
}

}  // namespace

bool isBoolEnum(hid_t type) {
  if (H5Tget_class(type) != H5T_ENUM || H5Tget_size(type) != 1) return false;
  const auto members = enumMembers(type);
  if (!members || members->size() != 2) return false;
  bool hasFalse = false, hasTrue = false;
  for (const EnumMember& m : *members) {
    hasFalse = hasFalse || (m.name == "FALSE" && m.bits == 0);
    hasTrue = hasTrue || (m.name == "TRUE" && m.bits == 1);
  }
  return hasFalse && hasTrue;
}

std::string describeEnum(hid_t type) {
  const H5Handle base = ownType(H5Tget_super(type));
  std::string text;
  if (base.valid() && H5Tget_class(base.get()) == H5T_INTEGER) {
    text = std::to_string(H5Tget_size(base.get())) + "-byte " +
           (H5Tget_sign(base.get()) == H5T_SGN_2 ? "signed" : "unsigned") + " integer base";
  } else {
    text = "a base that is not an integer";
  }
  auto members = enumMembers(type);
  if (!members) return text + "; members unreadable";
  // By value (HDF5 keeps them by name).
  std::sort(members->begin(), members->end(), [](const EnumMember& a, const EnumMember& b) {
    return a.isSigned ? static_cast<int64_t>(a.bits) < static_cast<int64_t>(b.bits)
                      : a.bits < b.bits;
  });
  text += ";";
  for (size_t i = 0; i < members->size(); ++i) {
    if (i == 8) {
      text += format(" ... ({} members)", members->size());
      break;
    }
    text += format("{} {}={}", i == 0 ? "" : ",", (*members)[i].name, (*members)[i].value());
  }
  return text;
}

}  // namespace xtrain::checkpoint
