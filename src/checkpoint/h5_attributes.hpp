// Scalar attributes of HDF5 objects: the root attributes of checkpoint.h5 and each dataset's crc32.
// Writers use fixed little-endian types (int64, float64, uint32) and variable-length UTF-8 strings;
// readers accept any integer / float / string type so that a file edited with h5py still reads.
// Every failure throws CheckpointError naming `where` (the file and object) and the attribute.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>

#include "checkpoint/hdf5_handle.hpp"

namespace xtrain::checkpoint {

void writeInt64Attribute(hid_t object, const std::string& name, int64_t value,
                         const std::string& where);
void writeUint32Attribute(hid_t object, const std::string& name, uint32_t value,
                          const std::string& where);
void writeDoubleAttribute(hid_t object, const std::string& name, double value,
                          const std::string& where);
void writeStringAttribute(hid_t object, const std::string& name, const std::string& value,
                          const std::string& where);

bool hasAttribute(hid_t object, const std::string& name);
// Throw when the attribute is missing or not of the expected class.
int64_t readInt64Attribute(hid_t object, const std::string& name, const std::string& where);
uint32_t readUint32Attribute(hid_t object, const std::string& name, const std::string& where);
double readDoubleAttribute(hid_t object, const std::string& name, const std::string& where);
std::string readStringAttribute(hid_t object, const std::string& name, const std::string& where);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
