#include "launcher/job_runner.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include "common/usable_cpus.hpp"
#include "launcher/environment.hpp"
#include "launcher/job_attempt.hpp"
#include "launcher/local_engine.hpp"
#include "launcher/restart_policy.hpp"
#include "xtrain/format.hpp"

namespace xtrain::launcher {
namespace {

void printTo(int fd, const std::string& text) {
  writeAll(fd, text);
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "SIGTERM (a preemption request)": how xrun names a signal that ends the job.
std::string describeEndSignal(int sig) {
  if (sig == SIGTERM) return "SIGTERM (a preemption request)";
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    return signalName(sig) + " (Slurm's warning before preemption)";
  }
  return signalName(sig);
}

// "; exit code 75, as at a preemption: ..." (SIGTERM, SIGUSR1, SIGUSR2), or "; exit code 130".
std::string describeEndCode(int sig) {
  const int code = exitCodeForSignalBeforeStart(sig);
  if (code == kPreemptedExitCode) {
    return format("; exit code {}, as at a preemption: run it again to continue", code);
  }
  return format("; exit code {}", code);
}

// A signal that ends the job came before `attempt` could start (runJob started nothing): says so
// and returns xrun's exit code.
int endedBeforeStart(int sig, const std::string& attempt) {
  printTo(2, format("xrun: received {} before {} started; nothing was started{}\n",
                    describeEndSignal(sig), attempt, describeEndCode(sig)));
  return exitCodeForSignalBeforeStart(sig);
}

std::string nameAttempt(int attempt) {
  return attempt == 0 ? std::string("the instances")
                      : format("the attempt with XTRAIN_RESTART_COUNT={}", attempt);
}

// "instance 1 was killed by signal 9 (SIGKILL)", or the engine's words.
std::string describeFailure(const JobOutcome& outcome, bool engineMode) {
  if (!engineMode) return format("instance {} {}", outcome.instance.value_or(-1), outcome.what);
  if (outcome.instance) return format("instance {} failed ({})", *outcome.instance, outcome.what);
  return outcome.what + " (it named no instance)";
}

// --dry-run: the commands, and what a failure would do.
void printDryRun(const JobPlan& plan) {
  const Options& o = plan.options;
  printTo(1, format("xrun: dry run, engine {}; nothing was started. The commands:\n",
                    toString(plan.engine)));
  for (const auto& line : plannedCommands(plan)) printTo(1, line + "\n");
  if (o.maxRestarts == 0) return;
  printTo(1, format("xrun: when an instance fails, every instance starts again, up to {} "
                    "time(s){}{}, with XTRAIN_RESTART_COUNT=1, 2, ...\n",
                    o.maxRestarts,
                    o.restartWindowSeconds ? format(" within any {} s", *o.restartWindowSeconds)
                                           : std::string(),
                    o.restartDelaySeconds > 0
                        ? format(", {} s after the failure", o.restartDelaySeconds)
                        : std::string()));
  if (o.minInstances) {
    printTo(1, format("xrun: an instance slot that is the first to fail, or does not arrive "
                      "at a collective, in {} attempts in a row is dropped at the next "
                      "restart, and a lost host at once, down to {} instance(s) "
                      "(--keep-global-batch {})\n",
                      kFailuresToDropSlot, *o.minInstances, plan.job.keepGlobalBatch));
  }
}

// The attempts of a job with restarts. Holds xrun's signal handlers for all of them and the
// pauses between them; plan.topology and plan.threadEnv follow the slots the job runs on.
class RestartLoop {
 public:
  RestartLoop(JobPlan& plan, std::string executable, std::string xrunPath);
  int run();

 private:
  LocalJobSpec specFor(int attempt);
  // The attempt stopped at a checkpoint for --grow-after: the exit code when the job ends here.
  std::optional<int> growBack(int attempt);
  // An instance failed: the exit code when the job ends here, else nullopt (after the delay).
  std::optional<int> restartAfter(int attempt, const JobOutcome& outcome);
  // The slots that keep failing, or a lost host, are left out of the next attempt when
  // --min-instances allows (restart_policy.hpp): the restart line's "starting ..." part.
  std::string shrinkFor(const FailureBlame& blame);
  // The next attempts run on `next` (ascending slots of full_).
  void useSlots(std::vector<int> next);

  JobPlan& plan_;
  const Options& o_;
  const std::string executable_;
  const std::string xrunPath_;
  SignalHandlers signals_;
  RestartBudget budget_;
  const std::string firstDir_;
  const std::chrono::steady_clock::time_point jobStart_;
  const bool engineMode_;
  // Shrinking (--min-instances): the original layout, the slots of the current attempt (indices
  // into it; instance i of the attempt is slot slots_[i]) and the row of failures per slot.
  const Topology full_;
  std::vector<int> slots_;
  std::vector<int> allSlots_;
  SlotFailures slotFailures_;
  const KeepGlobalBatch keep_;
  // Whether an earlier attempt found its checkpoint directory (XTRAIN_CHECKPOINT_DIR_SEEN), and
  // whether xrun could tell for every one (each had a rendezvous directory on this host).
  bool checkpointDirSeen_ = false;
  bool checkpointDirKnown_ = true;
};

RestartLoop::RestartLoop(JobPlan& plan, std::string executable, std::string xrunPath)
    : plan_(plan),
      o_(plan.options),
      executable_(std::move(executable)),
      xrunPath_(std::move(xrunPath)),
      budget_(o_.maxRestarts, o_.restartWindowSeconds),
      firstDir_(plan.job.rendezvousDir),
      jobStart_(std::chrono::steady_clock::now()),
      engineMode_(plan.engine != Engine::Local),
      full_(plan.topology),
      keep_(o_.keepGlobalBatch.value_or(KeepGlobalBatch::Accumulation)) {
  for (int i = 0; i < full_.numInstances; ++i) slots_.push_back(i);
  allSlots_ = slots_;
}

void RestartLoop::useSlots(std::vector<int> next) {
  slots_ = std::move(next);
  plan_.topology = topologyOfSlots(full_, slots_);
  slotFailures_.reset();
  // Fewer (or more) instances per host: each gets more (fewer) threads, when xrun sets them.
  const bool threadsSet = std::any_of(plan_.threadEnv.begin(), plan_.threadEnv.end(),
                                      [](const auto& v) { return v.first == "OMP_NUM_THREADS"; });
  plan_.threadEnv = threadDefaults(currentEnviron(), plan_.userEnv, plan_.topology.instancesPerHost,
                                   static_cast<unsigned>(usableCpus()));
  if (!threadsSet) {
    std::erase_if(plan_.threadEnv, [](const auto& v) { return v.first == "OMP_NUM_THREADS"; });
  }
}

LocalJobSpec RestartLoop::specFor(int attempt) {
  plan_.job.restartCount = attempt;
  plan_.job.rendezvousDir = attemptRendezvousDir(firstDir_, attempt);
  plan_.job.checkpointDirSeen = attempt == 0          ? std::string()
                                : checkpointDirSeen_  ? std::string("1")
                                : checkpointDirKnown_ ? std::string("0")
                                                      : std::string();
  LocalJobSpec spec = attemptSpec(plan_, executable_, xrunPath_);
  if (o_.timeoutSeconds) {
    spec.timeoutSeconds = *o_.timeoutSeconds - secondsSince(jobStart_);
    spec.timeoutShownSeconds = o_.timeoutSeconds;
  }
  spec.appendOutput = attempt > 0;  // --output-dir keeps every attempt's lines
  const bool shrunk = slots_.size() < allSlots_.size();
  if (o_.growAfterSeconds && shrunk) {
    spec.growAfterSeconds = *o_.growAfterSeconds;
    spec.growMessage = format(
        "growing back: the job ran {} s on {} of its {} instances (slots {}); asking them to "
        "stop at a checkpoint (SIGUSR1, as a preemption warning) to start all {} again",
        *o_.growAfterSeconds, slots_.size(), full_.numInstances, listSlots(slots_),
        full_.numInstances);
  }
  return spec;
}

int RestartLoop::run() {
  for (int attempt = 0;; ++attempt) {
    LocalJobSpec spec = specFor(attempt);
    // Every decision below to start another attempt first reads signals_.endRequested(): a signal
    // that ends the job, received at any time (consumed by runJob or not), starts nothing more.
    // runJob reads it once more with the signals blocked, just before it starts the instances.
    if (const int sig = signals_.endRequested(); sig != 0) {
      return endedBeforeStart(sig, nameAttempt(attempt));
    }
    AttemptNotes notes;
    const JobOutcome outcome = runAttempt(plan_, std::move(spec), &notes);
    checkpointDirSeen_ = checkpointDirSeen_ || notes.checkpointDirSeen;
    checkpointDirKnown_ = checkpointDirKnown_ && !plan_.job.rendezvousDir.empty();
    if (outcome.end == JobEnd::NotStarted) {
      return endedBeforeStart(outcome.endSignal, nameAttempt(attempt));
    }
    if (outcome.growRequested && outcome.end == JobEnd::Preempted &&
        outcome.exitCode == kPreemptedExitCode) {
      if (const auto code = growBack(attempt)) return *code;
      continue;
    }
    if (outcome.end != JobEnd::InstanceFailed) return outcome.exitCode;
    if (const auto code = restartAfter(attempt, outcome)) return *code;
  }
}

std::optional<int> RestartLoop::growBack(int attempt) {
  if (const int sig = signals_.endRequested(); sig != 0) {
    // The instances stopped at a checkpoint for the grow request and for this signal alike: the
    // job ends preempted, as it would have without --grow-after.
    printTo(2, format("xrun: growing back: every instance stopped at a checkpoint, but xrun "
                      "received {}; the job ends without starting all {} again; exit code "
                      "{}: run it again to continue\n",
                      describeEndSignal(sig), full_.numInstances, kPreemptedExitCode));
    return kPreemptedExitCode;
  }
  // Not a failure: the restart budget is not charged.
  useSlots(allSlots_);
  printTo(2, format("xrun: growing back: every instance stopped at a checkpoint; starting all "
                    "{} instances (slots {}) with XTRAIN_NUM_INSTANCES={} "
                    "XTRAIN_RESTART_COUNT={}\n",
                    full_.numInstances, listSlots(slots_), full_.numInstances, attempt + 1));
  return std::nullopt;
}

std::string RestartLoop::shrinkFor(const FailureBlame& blame) {
  std::vector<int> failing;
  std::string verdict;
  if (blame.kind == BlameKind::HostLost) {
    slotFailures_.reset();
    failing = blame.slots;
    verdict = format("host {} (slot{} {}) was lost: {}", blame.host, failing.size() == 1 ? "" : "s",
                     listSlots(failing), blame.clue);
  } else {
    failing = slotFailures_.onFailure(blame.slots);
    verdict =
        format("{} {} in {} attempts in a row", describeSlots(full_, failing),
               blame.kind == BlameKind::DidNotArrive
                   ? "did not arrive at a collective that the others waited for"
                   : (failing.size() == 1 ? "was the first to fail" : "were the first to fail"),
               kFailuresToDropSlot);
  }
  const std::string again = "starting every instance again with";
  if (!o_.minInstances || failing.empty()) return again;
  const ShrinkPlan shrink = planShrink(full_, slots_, failing, *o_.minInstances, keep_);
  if (shrink.belowMinimum) {
    return format(
        "{}, but the job cannot shrink below --min-instances {}{}; {}", verdict, *o_.minInstances,
        keep_ != KeepGlobalBatch::No
            ? format(" (with --keep-global-batch {} the instances must be a divisor of {})",
                     toString(keep_), full_.numInstances)
            : std::string(),
        again);
  }
  std::string starting = format(
      "{}: dropping {}{}; starting {} of the {} instances (slots {}) with XTRAIN_NUM_INSTANCES={}",
      verdict, failing.size() == 1 ? "it" : "them",
      shrink.alsoDropped.empty()
          ? std::string()
          : format(" and slot(s) {} (with --keep-global-batch {} the instances must be a divisor "
                   "of {})",
                   listSlots(shrink.alsoDropped), toString(keep_), full_.numInstances),
      shrink.keep.size(), full_.numInstances, listSlots(shrink.keep), shrink.keep.size());
  useSlots(shrink.keep);
  return starting;
}

std::optional<int> RestartLoop::restartAfter(int attempt, const JobOutcome& outcome) {
  std::string failure = describeFailure(outcome, engineMode_);
  const FailureBlame blame = blameFailure(outcome, full_, slots_);
  if (blame.kind == BlameKind::FirstToFail &&
      static_cast<int>(slots_.size()) != full_.numInstances) {
    failure += format(" (slot {})", blame.slots[0]);
  }
  std::string why;
  if (!isRestartable(outcome, why)) {
    printTo(2, format("xrun: not restarting: {}: {}\n", failure, why));
    return outcome.exitCode;
  }
  // A signal that came while the failed attempt was stopping (runJob kills at once then).
  if (const int sig = signals_.endRequested(); sig != 0) {
    printTo(2, format("xrun: not restarting: {}: xrun received {} while the attempt ended{}\n",
                      failure, describeEndSignal(sig), describeEndCode(sig)));
    return exitCodeForSignalBeforeStart(sig);
  }
  const double now = secondsSince(jobStart_);
  const std::optional<int> k = budget_.onFailure(now);
  const std::string window =
      o_.restartWindowSeconds ? format(" within the last {} s", *o_.restartWindowSeconds) : "";
  if (!k) {
    printTo(2, format("xrun: not restarting: {}; --max-restarts {} used up ({} restart(s){}); "
                      "exit code {}\n",
                      failure, o_.maxRestarts, budget_.counted(now), window, outcome.exitCode));
    return outcome.exitCode;
  }
  const std::string starting = shrinkFor(blame);
  printTo(2, format("xrun: restart {} of {}: {}; {} XTRAIN_RESTART_COUNT={}{}{}\n", *k,
                    o_.maxRestarts, failure, starting, attempt + 1,
                    o_.restartDelaySeconds > 0 ? format(" in {} s", o_.restartDelaySeconds) : "",
                    o_.restartWindowSeconds ? format(" ({} restart(s){})", *k, window) : ""));
  double delay = o_.restartDelaySeconds;
  if (o_.timeoutSeconds) delay = std::min(delay, std::max(0.0, *o_.timeoutSeconds - now));
  // A signal now ends the job: SIGTERM (a preemption request) and SIGUSR1/SIGUSR2 (Slurm's
  // warning before preemption: the allocation is about to go) with 75, so that the scheduler
  // requeues the job and it continues where this restart would have; SIGINT, SIGHUP with
  // 128 + signal.
  if (const int sig = signals_.waitForSignal(delay); sig != 0) {
    printTo(2, format("xrun: received {} before restart {}; the job ends without it{}\n",
                      describeEndSignal(sig), *k, describeEndCode(sig)));
    return exitCodeForSignalBeforeStart(sig);
  }
  if (o_.timeoutSeconds && secondsSince(jobStart_) >= *o_.timeoutSeconds) {
    printTo(2, format("xrun: the job reached --timeout {} s before restart {} could start\n",
                      *o_.timeoutSeconds, *k));
    return kTimeoutExitCode;
  }
  return std::nullopt;
}

}  // namespace

int runPlan(JobPlan plan) {
  // Reserved from before the instances start until the job has ended (across restarts: the next
  // attempt gets the same IPUs).
  IpuReservations reservations;
  if (plan.freePool) reservations = placeOnFreeIpus(plan);
  const Options& o = plan.options;
  if (o.printTopology || o.dryRun) printTo(1, describeTopology(plan.topology));
  if (!plan.rendezvousNote.empty()) printTo(2, "xrun: srun engine: " + plan.rendezvousNote + "\n");
  if (!plan.commBackendNote.empty()) printTo(2, "xrun: " + plan.commBackendNote + "\n");
  if (o.dryRun) {
    printDryRun(plan);
    return 0;
  }
  std::string xrunPath = "/usr/local/bin:/usr/bin:/bin";
  if (const char* p = std::getenv("PATH")) xrunPath = p;
  std::string path = xrunPath;
  for (const auto& [name, value] : plan.userEnv) {
    if (name == "PATH") path = value;
  }
  // Checked on this host before anything starts, whatever the engine.
  const std::string executable = resolveProgram(o.program, path);

  if (o.maxRestarts == 0) {
    const JobOutcome outcome = runAttempt(plan, attemptSpec(plan, executable, xrunPath));
    if (outcome.end == JobEnd::NotStarted)
      return endedBeforeStart(outcome.endSignal, "the instances");
    return outcome.exitCode;
  }
  // With restarts: xrun's signal handlers stay for every attempt and the pauses between them.
  RestartLoop loop(plan, executable, xrunPath);
  return loop.run();
}

}  // namespace xtrain::launcher
