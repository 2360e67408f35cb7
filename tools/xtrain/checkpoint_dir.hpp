// What xtrain checks about its --checkpoint-dir before training.
#pragma once

#include <cstdint>

#include "options.hpp"

namespace xtrain::tools {

// A fresh run (no --resume) would replace same-step checkpoints, repoint `latest` and prune with
// --keep-last: throws xtrain::error (exit 2) when --checkpoint-dir already holds checkpoints,
// naming the newest, unless --overwrite-checkpoints was given.
void refuseToOverwriteCheckpoints(const TrainOptions& options);

// The job's restart count from xrun (XTRAIN_RESTART_COUNT): 0 when unset, on the first attempt, or
// when not a number.
int64_t restartCount();

// A restart of a job (restartCount() > 0) with --resume auto must continue from a checkpoint, not
// train from scratch: the first attempt created --checkpoint-dir before its first step, so a
// missing directory, or one whose `latest` names a checkpoint while none is left, means the
// checkpoints are gone (deleted, or on a file system this host does not see). Throws xtrain::error
// (exit 2, which xrun does not restart) naming the directory. An existing directory without any
// checkpoint is left alone: the earlier attempt failed before its first one, and the restart starts
// afresh, saying so.
void refuseToStartAfreshOnRestart(const TrainOptions& options);

// Held by one job writing checkpoints into a --checkpoint-dir, for as long as it trains: an
// exclusive flock(2) on <dir>/.xtrain-lock, released by the kernel when the process ends however it
// ends. A second job (fresh or resumed) would otherwise commit and prune beside the first; the
// refusal above cannot see a job that started at the same instant into an empty directory.
class CheckpointDirectoryLock {
 public:
  CheckpointDirectoryLock() = default;
  CheckpointDirectoryLock(const CheckpointDirectoryLock&) = delete;
  CheckpointDirectoryLock& operator=(const CheckpointDirectoryLock&) = delete;
  CheckpointDirectoryLock(CheckpointDirectoryLock&& other) noexcept;
  CheckpointDirectoryLock& operator=(CheckpointDirectoryLock&& other) noexcept;
  ~CheckpointDirectoryLock();

 private:
  friend CheckpointDirectoryLock lockCheckpointDirectory(const TrainOptions&, int64_t);
  int fd_ = -1;
};

// On instance 0, with --checkpoint-dir: takes the directory's lock, or throws xtrain::error (exit
// 2) naming the process that holds it. With --overwrite-checkpoints a held lock is not an error
// (the user said the directory may be shared). Elsewhere: holds nothing.
CheckpointDirectoryLock lockCheckpointDirectory(const TrainOptions& options, int64_t instance);

}  // namespace xtrain::tools
