// The seal of a checkpoint (docs/checkpoint-format.md, "The seal"): a small text file written next
// to checkpoint.h5 by writeIndex, before the checkpoint is committed. It does two jobs:
//   - it carries the size and CRC-32 of checkpoint.h5, checked BEFORE HDF5 parses the index (HDF5
//     does not checksum everything it reads, e.g. the global heap of string attributes, and a
//     flipped byte there can crash the library);
//   - it marks the directory as one xtrain committed, so prune() never deletes a `ckpt-*` directory
//     xtrain did not write.
// Internal to src/checkpoint.
#pragma once
#pragma GCC visibility push(default)

#include <string>

namespace xtrain::checkpoint {

// Writes <dir>/seal for the <dir>/checkpoint.h5 that is there (durably: temporary file, fsync,
// rename). Throws CheckpointError.
void writeSeal(const std::string& dir);

enum class SealState {
  Sound,   // the seal is there and the index matches it
  Absent,  // no seal: a checkpoint of format version 1, or not written by xtrain
  Broken,  // the seal or the index is damaged (`problem` says which and how)
};

struct SealCheck {
  SealState state = SealState::Absent;
  std::string problem;
};

// Compares `indexFile` (the checkpoint.h5 of `dir`) with <dir>/seal. Reads the index as plain bytes
// only; never throws CheckpointError.
SealCheck checkSeal(const std::string& dir, const std::string& indexFile);

// True when <dir>/seal exists and is a seal (its first line), whether or not the index matches:
// the directory was written by xtrain.
bool isSealed(const std::string& dir);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
