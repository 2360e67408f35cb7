// Checkpoints of a TrainingSession (docs/checkpoint-format.md): weights, optimizer state, the
// random state and where the data stream was, in HDF5, loadable into a job of another replica
// layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/api.hpp"

namespace xtrain {

// What TrainingSession::saveCheckpoint records besides the session's own state.
struct XTRAIN_API CheckpointOptions {
  int64_t epoch = 0;
  int64_t samplesSeen = 0;
  // The caller's position in its data (e.g. epoch, index in the epoch, shuffle seed): given back by
  // loadCheckpoint so a resumed job continues the same sample order.
  std::vector<int64_t> dataPosition;
  // Write on a background thread: saveCheckpoint returns once the state is copied, training
  // continues, and the next saveCheckpoint, waitForCheckpoint() or the session's destruction waits
  // for the write (and reports its failure).
  bool asynchronous = false;
};

// What loadCheckpoint found.
struct XTRAIN_API CheckpointInfo {
  std::string path;
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t samplesSeen = 0;
  std::vector<int64_t> dataPosition;
  // The layout that wrote it (it may differ from this session's).
  int64_t globalReplicationFactor = 1;
  int64_t instances = 1;
};

}  // namespace xtrain
