// How xrun names the end of a process, and the exit codes it gives the job's ends of its own.
#pragma once

#include <string>

namespace xtrain::launcher {

inline constexpr int kTimeoutExitCode = 124;
// An instance that stopped for a preemption request, having saved its state (xtrain::dist).
inline constexpr int kPreemptedExitCode = 75;

// xrun's exit code when a signal ends the job before an attempt starts (between attempts, or
// before the first): kPreemptedExitCode for SIGTERM (a preemption request) and SIGUSR1/SIGUSR2
// (Slurm's warning before preemption), so that a job script requeues the job and it continues from
// its checkpoints; 128 + signal for SIGINT and SIGHUP (the user ends it).
int exitCodeForSignalBeforeStart(int sig);

// "SIGKILL" etc. for the common signals, "signal N" otherwise.
std::string signalName(int sig);

// Human text for a waitpid status: "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string describeStatus(int status);

// The shell convention: exit code, or 128 + signal.
int exitCodeOf(int status);

}  // namespace xtrain::launcher
