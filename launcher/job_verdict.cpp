#include "launcher/job_verdict.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <optional>

#include "launcher/exit_status.hpp"
#include "xtrain/format.hpp"

namespace xtrain::launcher {
namespace {

using Say = std::function<void(const std::string&)>;

bool exitedWith(const ProcessState& p, int code) {
  return p.reaped && WIFEXITED(p.status) && WEXITSTATUS(p.status) == code;
}

bool killedBySigkill(const ProcessState& p) {
  return WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGKILL;
}

// After a preemption request: kPreemptedExitCode when every process exited 0 or with that code,
// at least one with it, saying so; otherwise nothing (the usual exit code applies) after naming
// the processes the grace period's SIGKILL ended.
std::optional<int> preemptionOutcome(const LocalJobSpec& spec, const JobRecord& record,
                                     const std::vector<ProcessState>& processes, const Say& say) {
  int preempted = 0;
  bool clean = true;
  for (const ProcessState& p : processes) {
    if (!p.reaped) {
      clean = false;  // still running past the hard deadline: the watchdog ends it
    } else if (exitedWith(p, kPreemptedExitCode)) {
      ++preempted;
    } else if (!exitedWith(p, 0)) {
      clean = false;
      if (record.killedAtGraceEnd && record.stopReason == StopReason::Signal &&
          killedBySigkill(p)) {
        say(format("{} (pid {}) did not end within the grace period ({} s) and was killed",
                   spec.engine ? spec.engine->name : "instance " + std::to_string(p.index), p.pid,
                   spec.preemptionGraceSeconds));
      }
    }
  }
  if (!clean || preempted == 0) return std::nullopt;
  if (spec.engine) {
    say(format(
        "the job was preempted: {} exited with code {}, as its instances did; run it again to "
        "continue",
        spec.engine->name, kPreemptedExitCode));
  } else {
    say(
        format("the job was preempted: {} of {} instances exited with code {}; run it again to "
               "continue",
               preempted, processes.size(), kPreemptedExitCode));
  }
  return kPreemptedExitCode;
}

void judgeFailure(const LocalJobSpec& spec, const JobRecord& record,
                  const std::vector<ProcessState>& processes, const FailureWitness& witness,
                  const Say& say, JobOutcome& outcome) {
  if (record.firstFailure < 0) {
    outcome.end = JobEnd::StartFailed;
    outcome.exitCode = record.startExitCode;
    outcome.what = "could not be started";
    return;
  }
  const ProcessState& f = processes.at(static_cast<size_t>(record.firstFailure));
  outcome.end = JobEnd::InstanceFailed;
  outcome.exitCode = exitCodeOf(f.status);
  if (spec.engine) {
    say(witness.engineFailure(f.pid, f.status));
    outcome.instance = witness.blamedInstance();
    outcome.what = format("{} (pid {}) {}", spec.engine->name, f.pid, describeStatus(f.status));
    return;
  }
  outcome.instance = f.index;
  outcome.what = describeStatus(f.status);
  say(witness.instanceFailure(f.index, f.pid, f.status, record.runningAtFailure));
}

// An instance exited kPreemptedExitCode: the job was preempted unless another did not follow.
void judgePreempted(const LocalJobSpec& spec, const JobRecord& record,
                    const std::vector<ProcessState>& processes, const Say& say,
                    JobOutcome& outcome) {
  outcome.end = JobEnd::Preempted;
  outcome.exitCode = kPreemptedExitCode;
  if (auto code = preemptionOutcome(spec, record, processes, say)) {
    outcome.exitCode = *code;
    return;
  }
  // Some instance did not follow: its end is the job's.
  for (const ProcessState& p : processes) {
    if (exitedWith(p, 0) || exitedWith(p, kPreemptedExitCode)) continue;
    say(format("instance {} (pid {}) {} after instance {} was preempted", p.index, p.pid,
               !p.reaped ? std::string("is still running")
               : record.killedAtGraceEnd && killedBySigkill(p)
                   ? format("did not end within --grace-period {} s and was killed",
                            spec.preemptionGraceSeconds)
                   : describeStatus(p.status),
               record.firstFailure));
    outcome.exitCode = p.reaped ? exitCodeOf(p.status) : 128 + SIGKILL;
    return;
  }
}

}  // namespace

JobOutcome judgeJob(const LocalJobSpec& spec, const JobRecord& record,
                    const std::vector<ProcessState>& processes, const FailureWitness& witness,
                    const Say& say) {
  JobOutcome outcome;
  outcome.forwardedSignal = record.warnedWith;
  outcome.lostHost = witness.lostHost();
  outcome.didNotArrive = witness.didNotArrive();
  outcome.growRequested = record.growRequested;
  switch (record.stopReason) {
    case StopReason::Failure:
      judgeFailure(spec, record, processes, witness, say, outcome);
      return outcome;
    case StopReason::Timeout:
      outcome.end = JobEnd::Timeout;
      outcome.exitCode = kTimeoutExitCode;
      return outcome;
    case StopReason::Signal:
      if (auto code = preemptionOutcome(spec, record, processes, say)) {
        outcome.end = JobEnd::Preempted;
        outcome.exitCode = *code;
        return outcome;
      }
      outcome.end = JobEnd::Signal;
      outcome.exitCode = 128 + record.stopSignal;
      return outcome;
    case StopReason::Preempted:
      judgePreempted(spec, record, processes, say, outcome);
      return outcome;
    case StopReason::NotStarted:
      outcome.end = JobEnd::NotStarted;
      outcome.endSignal = record.notStartedBy;
      outcome.exitCode = exitCodeForSignalBeforeStart(record.notStartedBy);
      return outcome;
    case StopReason::Finished:
    case StopReason::None: return outcome;
  }
  return outcome;
}

}  // namespace xtrain::launcher
