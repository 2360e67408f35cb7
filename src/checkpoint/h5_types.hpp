// Element types on disk: the HDF5 type each xtrain DataType is written as, and back. One table, so
// the writer and the reader cannot disagree (docs/checkpoint-format.md, "Element types").
#pragma once
#pragma GCC visibility push(default)

#include <optional>
#include <string>

#include "checkpoint/hdf5_handle.hpp"
#include "xtrain/datatype.hpp"

namespace xtrain::checkpoint {

// The HDF5 type datasets of `type` are written with; also used as the memory type (xtrain's host
// layout is little-endian, like the file's). Throws CheckpointError for types a checkpoint cannot
// hold (STRING, UNDEFINED).
H5Handle hdf5TypeOf(DataType type);
// The DataType whose hdf5TypeOf equals `type` exactly, or nullopt (a file not written by xtrain).
std::optional<DataType> dataTypeOfHdf5(hid_t type);

// Whether the enum `type` is a boolean as h5py writes numpy bool: a 1-byte integer base (either
// sign, either byte order) and exactly the members FALSE = 0 and TRUE = 1.
bool isBoolEnum(hid_t type);
// An enum's base and members for messages: "1-byte signed integer base; RED=0, GREEN=1".
std::string describeEnum(hid_t type);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
