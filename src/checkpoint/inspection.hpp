// Reading a checkpoint: one walk through it, to the depth the caller needs, recording every problem
// rather than stopping at the first (so xckpt verify can list them all). read(), readAttributes(),
// verify(), listDatasets() and list() are thin views of it. Internal to src/checkpoint.
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::checkpoint {

enum class Depth {
  Attributes,  // locate checkpoint.h5, open it, read and check the root attributes
  Parts,       // ... and check that every part file exists
  Structure,   // ... open every part; check each virtual dataset's mapping, shape, type, crc32
               // attribute
  Checksums,   // ... read every dataset and compare its CRC-32 (values discarded)
  Data,        // ... and keep the values
};

struct Inspection {
  std::string dir;        // the checkpoint directory
  std::string indexFile;  // its checkpoint.h5
  Attributes attributes;  // as far as they could be read
  int parts = 0;
  std::vector<DatasetInfo> datasets;         // from Depth::Structure, the sound ones
  std::map<std::string, HostTensor> values;  // from Depth::Data
  std::vector<std::string> problems;         // empty when sound to the depth inspected
};

// `path`: a checkpoint directory or its checkpoint.h5. Never throws CheckpointError: problems are
// recorded (a problem that makes going deeper meaningless, such as a newer format version, ends the
// walk).
Inspection inspect(const std::string& path, Depth depth);
// Throws CheckpointError describing the problems of an inspection (all of them), if any.
void throwIfProblems(const Inspection& inspection);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
