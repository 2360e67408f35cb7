// Opening and creating the HDF5 files of a checkpoint, walking their datasets, and dataspaces.
// Internal to src/checkpoint.
#pragma once
#pragma GCC visibility push(default)

#include <string>
#include <vector>

#include "checkpoint/hdf5_handle.hpp"
#include "xtrain/names.hpp"

namespace xtrain::checkpoint {

// Creates (truncating) an HDF5 file in the newest file format of the library, whose object headers
// carry checksums, so corrupt metadata is detected on open. Throws CheckpointError.
H5Handle createHdf5File(const std::string& path);
// Opens an existing file read-only. Throws CheckpointError saying which of these it is: missing,
// not a regular file, not an HDF5 file, truncated, or otherwise unreadable (with HDF5's reason).
H5Handle openHdf5File(const std::string& path);
// Closes a file that was written, so that a failure to flush it is reported (a destructor cannot).
void closeWrittenFile(H5Handle& file, const std::string& path);

// The absolute paths ("/weights/W1") of every dataset in the file, sorted.
std::vector<std::string> datasetPaths(hid_t file, const std::string& where);
// True when `path` names a dataset of the file.
bool isDataset(hid_t file, const std::string& path);

// A scalar dataspace for shape {}, else a simple one.
H5Handle dataspaceFor(const Shape& shape);
Shape shapeOfSpace(hid_t space);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
