// Running a planned job: the dry run, one attempt, or the attempts of a job with restarts
// (--max-restarts), shrinking (--min-instances) and growing back (--grow-after).
//
// Contract (docs/errors.md lists the exit codes):
//  - --dry-run and --print-topology print the topology; --dry-run then the commands and the restart
//    policy, and starts nothing (exit 0).
//  - The program is resolved on this host before anything starts, whatever the engine.
//  - Without restarts: one attempt; its exit code is xrun's.
//  - With restarts: xrun's signal handlers stay for every attempt and the pauses between them; an
//    attempt whose instance failed (JobEnd::InstanceFailed) and that is restartable
//    (launcher/restart_policy.hpp) starts again, with XTRAIN_RESTART_COUNT one more, while the
//    restart budget lasts, without the slots that keep failing or the host that was lost when
//    --min-instances allows; an attempt that stopped at a checkpoint to grow back starts again on
//    every slot without charging the budget. A signal that ends the job, received at any time,
//    starts no further attempt (75 for SIGTERM, SIGUSR1, SIGUSR2; 128 + signal otherwise).
//    Every decision is said on stderr in one "xrun: ..." line.
#pragma once

#include "launcher/xrun.hpp"

namespace xtrain::launcher {

// Runs the plan; returns xrun's exit code. Throws what makes xrunMain print "xrun: error: ..."
// (ProgramError, UsageError, runtime_error) when the job cannot be started.
int runPlan(JobPlan plan);

}  // namespace xtrain::launcher
