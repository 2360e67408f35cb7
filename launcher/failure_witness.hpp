// The failure witness: what a job's stderr lines say about who failed and why, and the root-cause
// line xrun prints from it.
//
// Contract:
//  - Fed every stderr line of every instance (instanceStderr; in engine mode the lines the engine
//    tagged with an instance) and, in engine mode, the engine's own stderr lines (engineStderr).
//  - Keeps each instance's last three stderr lines, and the engine's last three of its own that
//    are not decoration (lines of dashes, blank lines).
//  - Records the first of each clue and keeps it: the instance the engine's own failure report
//    names (mpirun's "Process name: [[J,1],R]", srun's "task R"), the host whose daemon mpirun lost
//    ("Remote daemon: ... on node h2"), and the instances an instance's collective timeout names
//    as not arrived (launcher/failure_clues.hpp).
//  - The root-cause texts quote the last stderr lines (each cut at 300 characters) of the instance
//    that failed, else, in engine mode, the engine's own.
// Single-threaded; knows nothing of processes: a unit test feeds it lines.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/local_engine.hpp"
#include "launcher/output.hpp"

namespace xtrain::launcher {

class FailureWitness {
 public:
  // `numInstances`: the job's instances, whose indices the lines name. `engine`: set in engine mode
  // (its tag, name and hosts are used).
  FailureWitness(int numInstances, std::optional<EngineMode> engine);

  // A stderr line of instance `instance` (0 <= instance < numInstances).
  void instanceStderr(int instance, std::string_view line);
  // Engine mode: a stderr line of the engine's own (not tagged with an instance).
  void engineStderr(std::string_view line);

  // Engine mode: the instance the engine's failure report named first, if it is one of the job's.
  std::optional<int> blamedInstance() const;
  // mpirun: the host whose daemon mpirun lost contact with, else "".
  const std::string& lostHost() const { return lostHost_; }
  // The instances the first collective timeout that names any reported as not arrived.
  const std::vector<int>& didNotArrive() const { return didNotArrive_; }

  // "instance 2 (pid 42) exited with code 3, the first to fail; stopped the other 3 running; its
  // last stderr lines: "..." | "..."" (`othersRunning` 0: without the part about the others).
  std::string instanceFailure(int instance, pid_t pid, int status, int othersRunning) const;
  // Engine mode: "mpirun (pid 42) exited with code 3; it names instance 2 as the first to fail; it
  // lost contact with host h2 (instance 2: ...); the instance's last stderr lines: ..." (the named
  // instance's lines when it wrote any, else the engine's own).
  std::string engineFailure(pid_t pid, int status) const;

 private:
  int numInstances_;
  std::optional<EngineMode> engine_;
  std::vector<LineTail> tails_;  // per instance
  LineTail engineTail_{3};       // engine mode: the engine's own lines
  std::optional<int> blamed_;
  std::string lostHost_;
  std::vector<int> didNotArrive_;
};

}  // namespace xtrain::launcher
