// One attempt of a planned job: the IPUs it runs on, the LocalJobSpec that runJob
// (launcher/local_engine.hpp) takes for it, and running it with what it needs around it (its
// rendezvous directory, merging the instances' traces, removing what they left).
#pragma once

#include <string>

#include "launcher/ipu_allocation.hpp"
#include "launcher/local_engine.hpp"
#include "launcher/xrun.hpp"

namespace xtrain::launcher {

// Moves the instances onto blocks of IPUs free now on this host (plan.freePool must be set) and
// reserves them for the job (held until the returned object is destroyed); sets
// plan.topology.ipuNote. Says so on stderr when other processes hold the default ones, so a user
// of a shared host sees why the IPUs are not 0, 1, ...
IpuReservations placeOnFreeIpus(JobPlan& plan);

// The job's command for the plan's attempt (plan.job: its restart count and rendezvous
// directory): the instances' environments, or the engine's command line. `executable` is the
// program resolved on this host; `xrunPath` is xrun's PATH, where the engine is looked for (throws
// ProgramError when it is not there).
LocalJobSpec attemptSpec(const JobPlan& plan, const std::string& executable,
                         const std::string& xrunPath);

// What xrun learns from an attempt's rendezvous directory for the next ones.
struct AttemptNotes {
  // An instance created kCheckpointDirSeenFile: it found its checkpoint directory.
  bool checkpointDirSeen = false;
};

// One attempt: creates its rendezvous directory, runs it, and removes what it may have left (the
// directory, shared-memory segments of killed instances), after merging the instances' traces and
// reading their notes into `notes` (when given), however the attempt ended.
JobOutcome runAttempt(const JobPlan& plan, LocalJobSpec spec, AttemptNotes* notes = nullptr);

}  // namespace xtrain::launcher
