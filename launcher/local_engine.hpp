// The local engine: starts every instance on this host and supervises the job until every process
// of it is gone.
//
// Contract:
//  - Each instance is fork/exec'd in its own process group (pgid = its pid), stdin from /dev/null,
//    stdout and stderr into pipes that xrun reads in one poll() loop and prints line by line
//    (launcher/output_router.hpp).
//  - xrun becomes a child subreaper (PR_SET_CHILD_SUBREAPER): orphaned grandchildren are
//    reparented to it and reaped at once, so "this process group is empty" (kill(-pgid, 0) ==
//    ESRCH) is exact and prompt.
//  - Children get PR_SET_PDEATHSIG(SIGKILL); a watchdog process (its own process group, ignoring
//    the usual signals) knows every instance's process group and kills them, and removes
//    `cleanupDir`, if xrun dies without saying the job ended cleanly. So no process of the job
//    outlives xrun, even after a SIGKILL.
//  - The first instance to exit non-zero or die by a signal is the root cause: xrun sends SIGTERM
//    to every process group, SIGKILL to those still alive after the grace period, and returns that
//    instance's exit code (128 + signal for a signal) after printing one root-cause line on stderr.
//  - timeoutSeconds ends the job the same way and returns 124. SIGINT, SIGTERM and SIGHUP received
//    by xrun are forwarded to every instance's process group and end the job (128 + signal; one
//    received while already stopping kills at once, but for SIGTERM while the instances stop at a
//    checkpoint after one exited kPreemptedExitCode: the same request, they keep the grace
//    period); SIGUSR1 and SIGUSR2 are forwarded to every instance's main process only. SIGQUIT
//    prints the hang report and the job goes on. One of these (not SIGQUIT) received before the
//    instances are started starts none of them (JobEnd::NotStarted).
//  - Preemption: SIGTERM to xrun is forwarded the same way but leaves the instances
//    preemptionGraceSeconds to end; an instance exiting with kPreemptedExitCode (75: it saved its
//    state after SIGUSR1 or SIGTERM) sends nothing to the others and leaves them that long to end
//    by themselves. When every instance exited 0 or 75 (one at least 75), xrun returns 75.
//  - Every wait is bounded: the job ends at most its grace period + 3 s after it starts stopping.
//
// Engine mode (spec.engine set: --engine mpirun or srun): the job is one process, the engine, which
// starts the instances itself (here or on other hosts). It is started in a session of its own
// (setsid), since mpirun puts every process it starts in a process group of its own but leaves them
// in its session; the watchdog watches that session. Its output lines carry the engine's tags
// (launcher/output.hpp: parseEngineLine): printed as they are (--no-tag-output: without the tag),
// filtered by --only-output-from-instance on the tag, and written untagged to the per-instance
// files of outputDir; the engine's own untagged lines are always printed. Stopping (timeout,
// SIGINT/SIGTERM/SIGHUP) sends the signal to the engine only, which ends its instances its own way;
// after the grace period every process of the session gets SIGKILL. SIGUSR1/SIGUSR2 go to the
// engine, which forwards them. The exit code is the engine's (128 + signal when it was killed),
// 124 for the timeout, 128 + signal for a signal xrun received.
// Not thread-safe: it installs process-wide signal handlers for its duration. One job per process
// at a time.
//
// The parts: local_engine.cpp is the lifecycle loop (start, reap, poll, the stop policy: when to
// signal whom, the grace periods); launcher/child_process.hpp starts one process,
// launcher/job_signals.hpp turns signals into bytes on a pipe, launcher/output_router.hpp routes
// every line, launcher/failure_witness.hpp keeps what the lines say about a failure, and
// launcher/job_verdict.hpp turns what the loop saw into the JobOutcome and the root-cause line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/exit_status.hpp"
#include "launcher/job_signals.hpp"
#include "launcher/output.hpp"

namespace xtrain::launcher {

struct EngineMode {
  EngineTag tag = EngineTag::Mpirun;
  std::string name;      // "mpirun" or "srun", for messages
  int numInstances = 1;  // for the per-instance output files and the filter
  // The host of each instance (mpirun: as given with -H), to name the instances of a host the
  // engine lost; empty: not known.
  std::vector<std::string> hostOfInstance;
};

struct LocalJobSpec {
  std::string executable;         // resolved path (resolveProgram)
  std::vector<std::string> argv;  // argv[0] is the program as the user gave it
  std::vector<std::vector<std::string>> envPerInstance;  // "NAME=VALUE" lists, one per instance
                                                         // (engine mode: one, the engine's)
  std::optional<EngineMode> engine;                      // set: engine mode (see above)
  OutputPolicy output;
  std::string outputDir;  // non-empty: DIR/instance-<i>.out and .err get every line, untagged
  std::optional<double> timeoutSeconds;
  std::optional<double>
      timeoutShownSeconds;    // the --timeout its message names (default: the above)
  bool appendOutput = false;  // outputDir: append to the files (a restart) instead of truncating
  double gracePeriodSeconds =
      5.0;  // SIGTERM -> SIGKILL after a failure, the timeout, SIGINT/SIGHUP
  // SIGTERM -> SIGKILL after a preemption request: SIGTERM to xrun, or an instance exiting with
  // kPreemptedExitCode (the others get this long to end by themselves).
  double preemptionGraceSeconds = 30.0;
  std::string cleanupDir;  // removed by the watchdog if xrun dies (the caller removes it normally)
  // Where the instances keep their collective traces (XTRAIN_RENDEZVOUS_DIR; empty: none on this
  // host). Read for the hang report (launcher/hang_report.hpp) when an instance fails after a
  // collective timed out or mismatched, when the timeout fires, and on SIGQUIT.
  std::string traceDir;
  // Set (xrun --grow-after, on a shrunk attempt): after this long the instances are asked to stop
  // at a checkpoint, with SIGUSR1 as a preemption warning, so that the job can start again on
  // every slot; `growMessage` is the line xrun prints then.
  std::optional<double> growAfterSeconds;
  std::string growMessage;
  int stdoutFd = 1;  // where xrun prints instance stdout lines
  int stderrFd = 2;  // instance stderr lines and xrun's own messages
};

// How a run ended, for xrun's restart decision (launcher/restart_policy.hpp).
enum class JobEnd {
  Success,         // every instance exited 0
  InstanceFailed,  // an instance (engine mode: the engine) exited non-zero or was killed
  StartFailed,     // an instance or the engine could not be started (126, 127)
  Timeout,         // timeoutSeconds reached
  Signal,          // xrun received SIGINT, SIGTERM or SIGHUP
  Preempted,       // a preemption request (SIGTERM to xrun, an instance exiting with
                   // kPreemptedExitCode) ended the job
  NotStarted,      // xrun had received a signal that ends the job (SIGINT, SIGTERM, SIGHUP,
                   // SIGUSR1, SIGUSR2) before the instances were started: none was
};

struct JobOutcome {
  int exitCode = 0;
  JobEnd end = JobEnd::Success;
  // InstanceFailed: the first instance to fail (engine mode: the one the engine names, if any).
  std::optional<int> instance;
  // InstanceFailed: "was killed by signal 9 (SIGKILL)", "exited with code 3"; engine mode:
  // "mpirun (pid 42) exited with code 137".
  std::string what;
  // SIGUSR1 or SIGUSR2 (Slurm's warning before preemption) when xrun received and forwarded one
  // during the run, else 0.
  int forwardedSignal = 0;
  // InstanceFailed, mpirun engine: the host whose daemon mpirun lost contact with, else "".
  std::string lostHost;
  // InstanceFailed: the instances that an instance's collective timeout named as not arrived (the
  // first such report), else empty. The instance that reports a timeout is not its cause.
  std::vector<int> didNotArrive;
  // The attempt was asked to stop so that the job could grow (LocalJobSpec::growAfterSeconds).
  bool growRequested = false;
  // NotStarted: the signal xrun had received.
  int endSignal = 0;
};

// Runs the job (the instances, or in engine mode the engine); returns how it ended, after the
// root-cause line. Throws xtrain::runtime_error only when nothing could be started.
JobOutcome runJob(const LocalJobSpec& spec);

// runJob(spec).exitCode: xrun's exit code.
int runLocalJob(const LocalJobSpec& spec);

// The job's instances: engine mode spec.engine->numInstances, else one per spec.envPerInstance.
int numInstancesOf(const LocalJobSpec& spec);

}  // namespace xtrain::launcher
