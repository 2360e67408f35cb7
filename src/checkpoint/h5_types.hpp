// Element types on disk: the HDF5 type each xtrain DataType is written as, and back. One table, so
// the writer and the reader cannot disagree (docs/checkpoint-format.md, "Element types").
#pragma once
#pragma GCC visibility push(default)

#include <optional>

#include "checkpoint/hdf5_handle.hpp"
#include "xtrain/datatype.hpp"

namespace xtrain::checkpoint {

// The HDF5 type datasets of `type` are written with; also used as the memory type (xtrain's host
// layout is little-endian, like the file's). Throws CheckpointError for types a checkpoint cannot
// hold (STRING, UNDEFINED).
H5Handle hdf5TypeOf(DataType type);
// The DataType whose hdf5TypeOf equals `type` exactly, or nullopt (a file not written by xtrain).
std::optional<DataType> dataTypeOfHdf5(hid_t type);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
