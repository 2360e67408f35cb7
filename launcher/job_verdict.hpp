// The verdict on a job: from what the supervisor saw (why it stopped the job, how each process
// ended) and what the failure witness heard, how the job ended (JobOutcome: xrun's exit code and
// JobEnd) and the lines xrun prints about it.
//
// Contract (launcher/local_engine.hpp describes the exit codes):
//  - Failure: the first process to fail is the root cause: its exit code (128 + signal), and one
//    root-cause line (FailureWitness::instanceFailure, engine mode engineFailure); no process to
//    blame (firstFailure < 0): the start failed, startExitCode.
//  - Timeout: kTimeoutExitCode. Signal: 128 + the signal, unless the signal was SIGTERM's
//    preemption request and every process ended 0 or kPreemptedExitCode (one at least 75): then
//    kPreemptedExitCode, said in a line. Preempted (a process exited 75): kPreemptedExitCode when
//    every process followed, else the end of the first that did not, named in a line.
//  - NotStarted: exitCodeForSignalBeforeStart of the signal. Finished: 0.
// A pure function of its arguments but for the lines it hands to `say`, in the order xrun prints.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "launcher/failure_witness.hpp"
#include "launcher/local_engine.hpp"

namespace xtrain::launcher {

// Why the supervisor stopped the job. Preempted: an instance exited with kPreemptedExitCode while
// nothing else was stopping the job. NotStarted: a signal that ends the job came before the
// instances were started.
enum class StopReason { None, Failure, Finished, Timeout, Signal, Preempted, NotStarted };

// One process the supervisor started (the instances; engine mode: the engine).
struct ProcessState {
  int index = 0;
  pid_t pid = -1;
  bool reaped = false;  // ended, with `status` (waitpid's)
  int status = 0;
};

// What the supervisor recorded while the job ran.
struct JobRecord {
  StopReason stopReason = StopReason::None;
  int stopSignal = 0;             // Signal: which one xrun received
  int warnedWith = 0;             // the first SIGUSR1/SIGUSR2 xrun forwarded, if any
  bool growRequested = false;     // SIGUSR1 sent for --grow-after (not a warning xrun received)
  int notStartedBy = 0;           // the signal that ended the job before any process was started
  int firstFailure = -1;          // the process blamed (Failure, Preempted); < 0: none
  int startExitCode = 1;          // when a process could not be started (126, 127)
  int runningAtFailure = 0;       // the processes still running when the first failed
  bool killedAtGraceEnd = false;  // SIGKILL sent because the grace period ended
};

// The outcome; `say` gets the lines xrun prints on stderr about it (without "xrun: ").
JobOutcome judgeJob(const LocalJobSpec& spec, const JobRecord& record,
                    const std::vector<ProcessState>& processes, const FailureWitness& witness,
                    const std::function<void(const std::string&)>& say);

}  // namespace xtrain::launcher
