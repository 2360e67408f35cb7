// A dataset's element type, checked in the file's raw bytes before HDF5 decodes it. HDF5 1.10.8
// faults inside H5Dopen (H5T_copy reads past the buffer it decoded) on an enum whose size is not
// its base type's, which one flipped byte of an h5py bool dataset makes; h5dump faults the same
// way. Internal to src/checkpoint (DatasetReader).
#pragma once
#pragma GCC visibility push(default)

#include <string>

#include "checkpoint/hdf5_handle.hpp"

namespace xtrain::checkpoint {

// Throws xtrain::error naming `where` when the datatype message in the object header of dataset
// `name` of `file` (the HDF5 file at `path`) is an enum whose size differs from its base type's.
// An object header it cannot walk (another layout, a type message in a continuation block, a
// dataset in another file through an external link) is left to HDF5.
void checkEnumTypeBeforeOpening(hid_t file, const std::string& path, const std::string& name,
                                const std::string& where);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
