// Running a parse that may fault or never end in a child process. HDF5 does not checksum all the
// metadata it follows (the global heap of string attributes, for one): a damaged file can make it
// read out of bounds or loop forever. A checkpoint index with a seal is checked against it before
// HDF5 sees it; one without (format version 1, or an index under another name) is first parsed by
// a child, so that a fault or an endless loop ends the child, not the job. Internal to
// src/checkpoint.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <functional>
#include <string>

namespace xtrain::checkpoint {

struct IsolatedOutcome {
  bool completed = false;  // `work` returned (or threw) in the child within the limit
  std::string failure;     // otherwise: how the child ended ("signal 11 (Segmentation fault)", ...)
};

// Runs `work` in a forked child, waits at most `limit` (then kills it) and reports how it ended.
// Whatever `work` returns or throws is discarded: only that it finished counts. The child ends with
// _exit, running no atexit handlers (MPI's among them) of the caller's.
IsolatedOutcome runIsolated(const std::function<void()>& work, std::chrono::milliseconds limit);

// The limit for probing an unsealed index: XTRAIN_UNSEALED_INDEX_TIMEOUT (a duration,
// common/env_value.hpp) when set, else 5 s (a small index parses in milliseconds; the limit only
// ends loops). Throws xtrain::error for a bad value.
std::chrono::milliseconds unsealedIndexTimeLimit();

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
