// Where a training dataset's bytes lie in its file, checked before anything is read: HDF5 reads
// whatever addresses and sizes a damaged file's layout message or chunk index records. Internal to
// src/checkpoint (DatasetReader).
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <string>

#include "checkpoint/hdf5_handle.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::checkpoint {

// Throws xtrain::error naming `where` (the dataset and its file) when the storage of `ds` (of
// shape and type `full`, `fileElementSize` bytes per element in the file) cannot be right:
// contiguous or compact storage that does not hold the dataset's bytes or lies beyond the end of
// the file; a chunk outside the file, or an unfiltered chunk that does not hold a whole chunk; a
// layout xtrain does not read. Chunks never written are fine (HDF5 gives the fill value), and so
// are filtered (compressed) chunks of any size inside the file.
void checkStorageInsideFile(hid_t ds, const TensorInfo& full, size_t fileElementSize,
                            const std::string& where);

// Chunk indexes of at most this many chunks are checked chunk by chunk; larger ones as a whole
// (dataset_storage.cpp says why).
inline constexpr unsigned long long kChunksCheckedOneByOne = 2048;

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
