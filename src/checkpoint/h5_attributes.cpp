#include "checkpoint/h5_attributes.hpp"

#include <vector>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::checkpoint {

namespace {

std::string withDetail(const std::string& message) {
  const std::string detail = hdf5ErrorDetail();
  return detail.empty() ? message : message + " (HDF5: " + detail + ")";
}

void writeScalar(hid_t object, const std::string& name, hid_t fileType, hid_t memType,
                 const void* value, const std::string& where) {
  H5Handle space = ownSpace(H5Screate(H5S_SCALAR));
  // Re-saving an attribute replaces it (H5Acreate fails on an existing name).
  if (hasAttribute(object, name)) H5Adelete(object, name.c_str());
  H5Handle attr = ownAttribute(
      H5Acreate2(object, name.c_str(), fileType, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid() || H5Awrite(attr.get(), memType, value) < 0) {
    throw CheckpointError(withDetail(where + ": cannot write attribute '" + name + "'"));
  }
}

// Opens the attribute and checks its class; throws naming what was found.
H5Handle openAttribute(hid_t object, const std::string& name, H5T_class_t expected,
                       const char* expectedName, const std::string& where) {
  if (!hasAttribute(object, name)) {
    throw CheckpointError("{}: attribute '{}' is missing", where, name);
  }
  H5Handle attr = ownAttribute(H5Aopen(object, name.c_str(), H5P_DEFAULT));
  if (!attr.valid()) {
    throw CheckpointError(withDetail(where + ": cannot open attribute '" + name + "'"));
  }
  H5Handle type = ownType(H5Aget_type(attr.get()));
  H5Handle space = ownSpace(H5Aget_space(attr.get()));
  if (H5Tget_class(type.get()) != expected || H5Sget_simple_extent_npoints(space.get()) != 1) {
    throw CheckpointError("{}: attribute '{}' is not a single {}", where, name, expectedName);
  }
  return attr;
}

template <typename T>
T readNumber(hid_t object, const std::string& name, H5T_class_t cls, const char* clsName,
             hid_t memType, const std::string& where) {
  H5Handle attr = openAttribute(object, name, cls, clsName, where);
  T value{};
  if (H5Aread(attr.get(), memType, &value) < 0) {
    throw CheckpointError(withDetail(where + ": cannot read attribute '" + name + "'"));
  }
  return value;
}

}  // namespace

void writeInt64Attribute(hid_t object, const std::string& name, int64_t value,
                         const std::string& where) {
  writeScalar(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, where);
}

void writeUint32Attribute(hid_t object, const std::string& name, uint32_t value,
                          const std::string& where) {
  writeScalar(object, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value, where);
}

void writeDoubleAttribute(hid_t object, const std::string& name, double value,
                          const std::string& where) {
  writeScalar(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, where);
}

void writeStringAttribute(hid_t object, const std::string& name, const std::string& value,
                          const std::string& where) {
  // Variable-length UTF-8: h5py reads it as a Python str, h5dump prints it as text.
  H5Handle type = ownType(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  const char* text = value.c_str();
  writeScalar(object, name, type.get(), type.get(), &text, where);
}

bool hasAttribute(hid_t object, const std::string& name) {
  return H5Aexists(object, name.c_str()) > 0;
}

int64_t readInt64Attribute(hid_t object, const std::string& name, const std::string& where) {
  return readNumber<int64_t>(object, name, H5T_INTEGER, "integer", H5T_NATIVE_INT64, where);
}

uint32_t readUint32Attribute(hid_t object, const std::string& name, const std::string& where) {
  return readNumber<uint32_t>(object, name, H5T_INTEGER, "integer", H5T_NATIVE_UINT32, where);
}

double readDoubleAttribute(hid_t object, const std::string& name, const std::string& where) {
  return readNumber<double>(object, name, H5T_FLOAT, "number", H5T_NATIVE_DOUBLE, where);
}

std::string readStringAttribute(hid_t object, const std::string& name, const std::string& where) {
  H5Handle attr = openAttribute(object, name, H5T_STRING, "string", where);
  H5Handle fileType = ownType(H5Aget_type(attr.get()));
  if (H5Tis_variable_str(fileType.get()) > 0) {
    H5Handle memType = ownType(H5Tcopy(H5T_C_S1));
    H5Tset_size(memType.get(), H5T_VARIABLE);
    H5Tset_cset(memType.get(), H5Tget_cset(fileType.get()));
    char* text = nullptr;
    if (H5Aread(attr.get(), memType.get(), &text) < 0) {
      throw CheckpointError(withDetail(where + ": cannot read attribute '" + name + "'"));
    }
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  // Fixed-length (e.g. written by another tool): read the bytes and drop the padding.
  const size_t size = H5Tget_size(fileType.get());
  std::vector<char> buf(size + 1, '\0');
  if (H5Aread(attr.get(), fileType.get(), buf.data()) < 0) {
    throw CheckpointError(withDetail(where + ": cannot read attribute '" + name + "'"));
  }
  std::string value(buf.data());  // up to the first NUL (null-terminated or null-padded)
  if (H5Tget_strpad(fileType.get()) == H5T_STR_SPACEPAD) {
    value.erase(value.find_last_not_of(' ') + 1);
  }
  return value;
}

}  // namespace xtrain::checkpoint
