// The local engine: starts every instance on this host and supervises the job until every process
// of it is gone.
//
// Contract:
//  - Each instance is fork/exec'd in its own process group (pgid = its pid), stdin from /dev/null,
//  stdout and
//    stderr into pipes that xrun reads in one poll() loop and prints line by line
//    (launcher/output.hpp).
//  - xrun becomes a child subreaper (PR_SET_CHILD_SUBREAPER): orphaned grandchildren are reparented
//  to it and
//    reaped at once, so "this process group is empty" (kill(-pgid, 0) == ESRCH) is exact and
//    prompt.
//  - Children get PR_SET_PDEATHSIG(SIGKILL); a watchdog process (its own process group, ignoring
//  the usual
//    signals) knows every instance's process group and kills them, and removes `cleanupDir`, if
//    xrun dies without saying the job ended cleanly. So no process of the job outlives xrun, even
//    after a SIGKILL.
//  - The first instance to exit non-zero or die by a signal is the root cause: xrun sends SIGTERM
//  to every
//    process group, SIGKILL to those still alive after the grace period, and returns that
//    instance's exit code (128 + signal for a signal) after printing one root-cause line on stderr.
//  - timeoutSeconds ends the job the same way and returns 124. SIGINT, SIGTERM and SIGHUP received
//  by xrun are
//    forwarded to every instance's process group and end the job (128 + signal; one received while
//    already stopping kills at once); SIGUSR1 and SIGUSR2 are forwarded to every instance's main
//    process only.
//  - Every wait is bounded: the job ends at most gracePeriod + 3 s after it starts stopping.
// Not thread-safe: it installs process-wide signal handlers for its duration. One job per process
// at a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/output.hpp"

namespace xtrain::launcher {

inline constexpr int kTimeoutExitCode = 124;

struct LocalJobSpec {
  std::string executable;         // resolved path (resolveProgram)
  std::vector<std::string> argv;  // argv[0] is the program as the user gave it
  std::vector<std::vector<std::string>> envPerInstance;  // "NAME=VALUE" lists, one per instance
  OutputPolicy output;
  std::string outputDir;  // non-empty: DIR/instance-<i>.out and .err get every line, untagged
  std::optional<double> timeoutSeconds;
  double gracePeriodSeconds = 5.0;
  std::string cleanupDir;  // removed by the watchdog if xrun dies (the caller removes it normally)
  int stdoutFd = 1;        // where xrun prints instance stdout lines
  int stderrFd = 2;        // instance stderr lines and xrun's own messages
};

// Runs the job; returns xrun's exit code. Throws xtrain::runtime_error only when nothing could be
// started.
int runLocalJob(const LocalJobSpec& spec);

// "SIGKILL" etc. for the common signals, "signal N" otherwise.
std::string signalName(int sig);

// Human text for a waitpid status: "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string describeStatus(int status);

// The shell convention: exit code, or 128 + signal.
int exitCodeOf(int status);

}  // namespace xtrain::launcher
