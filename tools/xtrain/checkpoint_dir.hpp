// What xtrain checks about its --checkpoint-dir before training.
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/checkpoint_directory.hpp"
#include "options.hpp"

namespace xtrain::tools {

// A fresh run (no --resume) would replace same-step checkpoints, repoint `latest` and prune with
// --keep-last: throws xtrain::error (exit 2) when --checkpoint-dir already holds checkpoints,
// naming the newest, unless --overwrite-checkpoints was given.
void refuseToOverwriteCheckpoints(const TrainOptions& options);

// Whether this run of the job is a restart, and which variable says so: xrun's restart count
// (XTRAIN_RESTART_COUNT, --max-restarts) or Slurm's (SLURM_RESTART_COUNT, set in a batch job that
// Slurm requeued: `scontrol requeue`, preemption with requeue, a node failure). xrun's wins when
// both are above 0. A variable unset, empty, negative or not a number counts as 0.
struct JobRestart {
  int64_t count = 0;     // 0: the job's first run
  std::string variable;  // "XTRAIN_RESTART_COUNT" or "SLURM_RESTART_COUNT"; empty when count == 0

  // "restart 2 of the job" (xrun) or "requeue 2 of Slurm job 17" (Slurm; the id when known).
  std::string describe() const;
};
JobRestart jobRestart();

// A restart of a job (jobRestart().count > 0) with --resume auto must continue from a checkpoint,
// not train from scratch: an earlier attempt created --checkpoint-dir before its first step, so a
// missing directory, or one whose `latest` names a checkpoint while none is left, means the
// checkpoints are gone (deleted, or on a file system this host does not see). Throws xtrain::error
// (exit 2, which xrun does not restart) naming the directory and the variable that said it was a
// restart. An existing directory without any checkpoint is left alone: the earlier attempt failed
// before its first one, and the restart starts afresh, saying so.
// Except when xrun says that no earlier attempt of the job got as far as finding its checkpoint
// directory (XTRAIN_CHECKPOINT_DIR_SEEN=0, and not a requeued Slurm job): they all failed while
// starting, no checkpoint of the job can exist, and the restart starts as the first attempt did.
void refuseToStartAfreshOnRestart(const TrainOptions& options);

// Under xrun (XTRAIN_RENDEZVOUS_DIR set) with --checkpoint-dir: tells xrun that this attempt found
// its checkpoint directory in place, by creating the file `checkpoint-dir-seen` in the rendezvous
// directory (docs/launcher-environment.md, "Restarts"), so that later attempts get
// XTRAIN_CHECKPOINT_DIR_SEEN=1. Call once the directory exists, before the first step (before any
// checkpoint of the attempt can be written). Throws xtrain::runtime_error when the file cannot be
// made. Elsewhere: does nothing.
void tellXrunTheCheckpointDirectoryExists(const TrainOptions& options);

// On instance 0, with --checkpoint-dir: takes the directory's lock, or throws xtrain::error (exit
// 2) naming the directory and the process that holds it, with --overwrite-checkpoints too: that
// flag lets a fresh run replace the checkpoints of a job that ended, and a held lock means the job
// is still running. Elsewhere: holds nothing.
checkpoint::CheckpointDirectory::Lock lockCheckpointDirectory(const TrainOptions& options,
                                                              int64_t instance);

}  // namespace xtrain::tools
