#include "launcher/local_engine.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "launcher/child_process.hpp"
#include "launcher/failure_witness.hpp"
#include "launcher/hang_report.hpp"
#include "launcher/job_verdict.hpp"
#include "launcher/output_router.hpp"
#include "launcher/watchdog.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::launcher {

int numInstancesOf(const LocalJobSpec& spec) {
  return spec.engine ? spec.engine->numInstances : static_cast<int>(spec.envPerInstance.size());
}

namespace {

using Clock = std::chrono::steady_clock;

// Logging must never end a job: a bad XTRAIN_LOG_* setting is reported once by xrunMain, then
// ignored here.
void debugLog(const std::string& text) noexcept {
  try {
    logging::launcher::debug("{}", text);
  } catch (...) {
  }
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

Clock::time_point after(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// One process the supervisor started (an instance; engine mode: the engine): how it ended, whether
// its process group (engine: its session) is empty, and the read ends of its output pipes.
struct Instance : ProcessState {
  bool groupGone = false;
  int fd[2] = {-1, -1};  // stdout, stderr
};

// The lifecycle loop of one job: starts the processes, then reaps, reads their output and handles
// xrun's signals in one poll() loop, decides when to stop the job and whom to signal, and waits
// (bounded) until every process of the job is gone.
class Supervisor {
 public:
  explicit Supervisor(const LocalJobSpec& spec)
      : spec_(spec), witness_(numInstancesOf(spec), spec.engine), router_(spec, witness_) {}
  ~Supervisor() {
    for (auto& inst : instances_) {
      for (int s = 0; s < 2; ++s) closeFd(inst.fd[s]);
    }
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  JobOutcome run();

 private:
  // Starting.
  void startJob();
  void startAll();
  void startOne(Instance& inst, const ExecArrays& exec, int devNull);
  // One pass of the loop.
  void requestGrowIfDue(Clock::time_point now);
  void stopIfTimedOut(Clock::time_point now);
  bool stoppedAndGone(Clock::time_point now);
  void logWhoIsLeft(Clock::time_point now);
  void pollOnce(Clock::time_point now);
  void handleSignals();
  void handleSignal(int sig);
  void reap();
  void readReady(const std::vector<pollfd>& fds);
  void readFrom(Instance& inst, int stream);
  void closeStream(Instance& inst, int stream);
  // Stopping.
  void beginStop(StopReason reason, int termSignal);
  void signalGroups(int sig);
  void checkGroups();
  bool allGone() const;
  bool anyStreamOpen() const;
  enum class ReportWhen { CollectiveFailed, AnyCollective, Always };
  void reportHang(const std::string& why, ReportWhen when);
  JobOutcome finish();
  // "mpirun" or "instance 3", for messages.
  std::string nameOf(const Instance& inst) const;

  const LocalJobSpec& spec_;
  const bool engineMode_ = spec_.engine.has_value();
  FailureWitness witness_;
  OutputRouter router_;
  std::vector<Instance> instances_;  // engine mode: one, the engine
  std::optional<Watchdog> watchdog_;
  JobRecord record_;  // why the job stopped and who failed, for the verdict

  bool killed_ = false;
  Clock::time_point start_;
  std::optional<Clock::time_point> timeoutAt_;
  std::optional<Clock::time_point> growAt_;
  Clock::time_point killDeadline_;
  Clock::time_point hardDeadline_;
  std::optional<Clock::time_point> drainDeadline_;
  Clock::time_point nextWaitingLog_;  // while stopping: when to log who is still alive again
};

std::string Supervisor::nameOf(const Instance& inst) const {
  return engineMode_ ? spec_.engine->name : "instance " + std::to_string(inst.index);
}

// The job-wide hang report (launcher/hang_report.hpp), printed on stderr.
void Supervisor::reportHang(const std::string& why, ReportWhen when) {
  if (spec_.traceDir.empty()) {
    if (when == ReportWhen::Always) {
      router_.message("hang report (" + why +
                      "): not available: the instances may run on other hosts, so xrun has no "
                      "job directory where they record their collectives");
    }
    return;
  }
  try {
    const auto traces = readTraces(spec_.traceDir, numInstancesOf(spec_));
    if (when == ReportWhen::CollectiveFailed && !hasCollectiveFailure(traces)) return;
    if (when == ReportWhen::AnyCollective && !hasAnyCollective(traces)) return;
    for (const auto& line : hangReport(traces, steadyNowNs(), why)) router_.message(line);
  } catch (const std::exception& e) {
    router_.message("hang report (" + why + "): cannot be made: " + e.what());
  }
}

void Supervisor::startOne(Instance& inst, const ExecArrays& exec, int devNull) {
  ForkedChild child = forkChild(spec_.executable, exec, devNull, engineMode_, inst.index);
  inst.pid = child.pid;
  inst.fd[0] = child.stdoutFd;
  inst.fd[1] = child.stderrFd;
  if (watchdog_) {
    if (engineMode_) {
      watchdog_->watchSession(child.pid);
    } else {
      watchdog_->watch(child.pid);
    }
  }
  const int childErrno = awaitExec(child);
  if (childErrno == 0) return;
  record_.startExitCode = childErrno == ENOENT ? 127 : 126;
  if (engineMode_) {
    throw runtime_error("cannot start {} ({}): {}", spec_.engine->name, spec_.executable,
                        std::strerror(childErrno));
  }
  throw runtime_error("cannot start instance {} ({}): {}", inst.index, spec_.executable,
                      std::strerror(childErrno));
}

void Supervisor::startAll() {
  int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) throw runtime_error("cannot open /dev/null: {}", std::strerror(errno));
  std::vector<ExecArrays> exec;
  for (const auto& env : spec_.envPerInstance) exec.push_back(makeExecArrays(spec_.argv, env));

  BlockSignals block;
  // With the signals blocked, no handler runs until every instance is started: a signal that came
  // before is seen here and nothing starts; one that comes after is forwarded to the instances.
  if (endSignalReceived() != 0) {
    record_.notStartedBy = endSignalReceived();
    ::close(devNull);
    return;
  }
  for (size_t i = 0; i < instances_.size(); ++i) {
    try {
      startOne(instances_[i], exec[i], devNull);
    } catch (...) {
      ::close(devNull);
      throw;
    }
  }
  ::close(devNull);
}

// Subreaper, watchdog, then every process; a process that cannot be started stops the job at once.
void Supervisor::startJob() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  watchdog_.emplace(spec_.cleanupDir);
  try {
    startAll();
  } catch (const std::exception& e) {
    router_.message(e.what());
    beginStop(StopReason::Failure, SIGKILL);
    record_.firstFailure = -2;  // nothing to blame: the start failed
    for (auto& inst : instances_) {
      if (inst.pid <= 0) inst.reaped = inst.groupGone = true;
    }
  }
}

void Supervisor::closeStream(Instance& inst, int stream) {
  router_.endOfStream(inst.index, stream == 0 ? Stream::Stdout : Stream::Stderr);
  closeFd(inst.fd[stream]);
}

void Supervisor::readFrom(Instance& inst, int stream) {
  char buffer[65536];
  ssize_t n = ::read(inst.fd[stream], buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    closeStream(inst, stream);
    return;
  }
  router_.feed(inst.index, stream == 0 ? Stream::Stdout : Stream::Stderr,
               std::string_view(buffer, static_cast<size_t>(n)));
}

void Supervisor::readReady(const std::vector<pollfd>& fds) {
  for (const auto& p : fds) {
    if (p.fd == signalPipeReadFd() || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    for (auto& inst : instances_) {
      for (int s = 0; s < 2; ++s) {
        if (inst.fd[s] == p.fd) readFrom(inst, s);
      }
    }
  }
}

void Supervisor::signalGroups(int sig) {
  if (engineMode_) {
    // The engine ends its instances its own way; once it is gone (or for SIGKILL), every process
    // left in its session gets the signal.
    Instance& engine = instances_.front();
    if (engine.pid <= 0 || engine.groupGone) return;
    if (!engine.reaped && sig != SIGKILL) {
      ::kill(engine.pid, sig);
    } else {
      signalSession(engine.pid, sig);
    }
    return;
  }
  for (auto& inst : instances_) {
    if (inst.pid <= 0 || inst.groupGone) continue;
    if (::kill(-inst.pid, sig) != 0 && errno == ESRCH && inst.reaped) inst.groupGone = true;
  }
}

void Supervisor::beginStop(StopReason reason, int termSignal) {
  if (record_.stopReason != StopReason::None) return;
  record_.stopReason = reason;
  auto now = Clock::now();
  // A preemption request leaves the instances the time to save their state; anything else ends the
  // job promptly.
  const bool preemption =
      reason == StopReason::Preempted || (reason == StopReason::Signal && termSignal == SIGTERM);
  const double seconds = preemption ? spec_.preemptionGraceSeconds : spec_.gracePeriodSeconds;
  killDeadline_ = after(now, seconds);
  hardDeadline_ = killDeadline_ + std::chrono::seconds(3);
  static const char* const reasons[] = {
      "none",   "an instance failed",        "every instance ended", "timeout",
      "signal", "an instance was preempted", "nothing was started"};
  debugLog(format("stopping the job ({}); sending {} to every process group, SIGKILL in {} s",
                  reasons[static_cast<int>(reason)],
                  termSignal == 0 ? "nothing" : signalName(termSignal), seconds));
  if (termSignal != 0) signalGroups(termSignal);
  // A stopped process (SIGSTOP, a debugger's, Ctrl-Z's) acts on a signal only once continued: it
  // would otherwise wait for the SIGKILL at the grace period's end (Slurm sends SIGCONT too).
  if (termSignal != 0 && termSignal != SIGKILL) signalGroups(SIGCONT);
}

void Supervisor::reap() {
  // xrun is a child subreaper: orphaned grandchildren come here too and are reaped (and ignored),
  // so a process group empties as soon as its processes die, whatever init does.
  // An instance killed by a signal and one that exited non-zero reaped in the same pass: the killed
  // one is blamed (waitpid's order is not the order of death, and a peer of a killed instance
  // exits with an error as soon as it sees it gone).
  bool blamedAnExitThisPass = false;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(-1, &status, WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (watchdog_ && r == watchdog_->pid()) {
      watchdog_->markReaped();
      continue;
    }
    auto it = std::find_if(instances_.begin(), instances_.end(),
                           [r](const Instance& i) { return i.pid == r; });
    if (it == instances_.end()) continue;
    Instance& inst = *it;
    inst.reaped = true;
    inst.status = status;
    debugLog(format("{} (pid {}) {}", nameOf(inst), inst.pid, describeStatus(status)));
    // The engine ended while the job was stopping: what it left in its session is asked to end
    // now rather than at the grace period's end.
    if (engineMode_ && record_.stopReason != StopReason::None && !killed_) {
      signalSession(inst.pid, SIGTERM);
    }
    bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // (Not SIGTERM: that is what xrun has just sent the others.)
    if (failed && blamedAnExitThisPass && WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM &&
        record_.stopReason == StopReason::Failure && !killed_ && !engineMode_) {
      record_.firstFailure = inst.index;
      blamedAnExitThisPass = false;
      continue;
    }
    if (failed && record_.stopReason == StopReason::None && WIFEXITED(status) &&
        WEXITSTATUS(status) == kPreemptedExitCode) {
      // It saved its state after a preemption request; the others stop after the same step (they
      // agree on it), so they get the grace period to end by themselves.
      record_.firstFailure = inst.index;
      debugLog(
          format("{} (pid {}) was preempted (exit code {}); waiting up to {} s "
                 "(--grace-period) for the others to end",
                 nameOf(inst), inst.pid, kPreemptedExitCode, spec_.preemptionGraceSeconds));
      beginStop(StopReason::Preempted, 0);
    } else if (failed && record_.stopReason == StopReason::None) {
      record_.firstFailure = inst.index;
      blamedAnExitThisPass = WIFEXITED(status);
      record_.runningAtFailure = static_cast<int>(std::count_if(
          instances_.begin(), instances_.end(), [](const Instance& i) { return !i.reaped; }));
      // Read before anything is stopped: the traces show where each instance was.
      reportHang(format("{} failed after a collective timed out or mismatched",
                        engineMode_ ? spec_.engine->name : format("instance {}", inst.index)),
                 ReportWhen::CollectiveFailed);
      // Stop everything, the failed instance's own group included (its children may live on).
      beginStop(StopReason::Failure, SIGTERM);
    }
  }
  bool allReaped =
      std::all_of(instances_.begin(), instances_.end(), [](const Instance& i) { return i.reaped; });
  // Every instance ended by itself: anything left in their groups (background children) is ended
  // too.
  if (allReaped && record_.stopReason == StopReason::None) {
    beginStop(StopReason::Finished, SIGTERM);
  }
}

void Supervisor::handleSignals() {
  unsigned char buf[64];
  for (;;) {
    ssize_t n = ::read(signalPipeReadFd(), buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t k = 0; k < n; ++k) handleSignal(buf[k]);
  }
}

void Supervisor::handleSignal(int sig) {
  if (sig == SIGCHLD) return;  // reap() runs on every loop iteration
  if (sig == SIGQUIT) {
    reportHang("SIGQUIT; the job goes on", ReportWhen::Always);
    return;
  }
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    if (record_.warnedWith == 0) record_.warnedWith = sig;
    for (auto& inst : instances_) {
      if (!inst.reaped) ::kill(inst.pid, sig);
    }
    router_.message("received " + signalName(sig) + "; forwarded to " +
                    (engineMode_ ? spec_.engine->name + ", which passes it to every instance"
                                 : std::string("every instance")));
    return;
  }
  // SIGINT, SIGTERM, SIGHUP: forward to every group and end the job; again: kill at once.
  if (record_.stopReason == StopReason::None) {
    router_.message(
        "received " + signalName(sig) + "; forwarding it to " +
        (engineMode_ ? spec_.engine->name : std::string("every instance")) + " and ending the job" +
        (sig == SIGTERM
             ? format(" (SIGKILL after --grace-period {} s)", spec_.preemptionGraceSeconds)
             : std::string()));
    record_.stopSignal = sig;
    beginStop(StopReason::Signal, sig);
  } else if (sig == SIGTERM && record_.stopReason == StopReason::Preempted && !killed_) {
    // The instances are already stopping at a checkpoint for a preemption request (one exited
    // 75): this is the same request. Killing them now would lose the checkpoint they write.
    router_.message(
        format("received SIGTERM while the instances stop at a checkpoint; they keep the rest of "
               "--grace-period {} s",
               spec_.preemptionGraceSeconds));
  } else if (!killed_) {
    // Already stopping (a signal, a failure or the timeout): the user wants it over now.
    router_.message("received " + signalName(sig) +
                    " while stopping the job; killing every instance");
    signalGroups(SIGKILL);
    killed_ = true;
  }
}

void Supervisor::checkGroups() {
  if (engineMode_) {
    Instance& engine = instances_.front();
    if (!engine.reaped || engine.groupGone) return;
    // Killing: again on every pass, for processes forked meanwhile.
    if (sessionMembers(engine.pid).empty() ||
        (killed_ && signalSession(engine.pid, SIGKILL) == 0)) {
      engine.groupGone = true;
      if (watchdog_) watchdog_->forgetSession(engine.pid);
    }
    return;
  }
  for (auto& inst : instances_) {
    if (!inst.reaped || inst.groupGone) continue;
    if (::kill(-inst.pid, 0) != 0 && errno == ESRCH) {
      inst.groupGone = true;
      if (watchdog_) watchdog_->forget(inst.pid);
    }
  }
}

bool Supervisor::allGone() const {
  return std::all_of(instances_.begin(), instances_.end(),
                     [](const Instance& i) { return i.reaped && i.groupGone; });
}

bool Supervisor::anyStreamOpen() const {
  return std::any_of(instances_.begin(), instances_.end(),
                     [](const Instance& i) { return i.fd[0] >= 0 || i.fd[1] >= 0; });
}

// --grow-after: as a scheduler's warning would, SIGUSR1 asks the instances to stop after a whole
// step, at a checkpoint.
void Supervisor::requestGrowIfDue(Clock::time_point now) {
  if (record_.stopReason != StopReason::None || !growAt_ || record_.growRequested ||
      now < *growAt_) {
    return;
  }
  router_.message(spec_.growMessage);
  record_.growRequested = true;
  for (auto& inst : instances_) {
    if (!inst.reaped) ::kill(inst.pid, SIGUSR1);
  }
}

void Supervisor::stopIfTimedOut(Clock::time_point now) {
  if (record_.stopReason != StopReason::None || !timeoutAt_ || now < *timeoutAt_) return;
  const double shown = spec_.timeoutShownSeconds.value_or(*spec_.timeoutSeconds);
  router_.message(format("the job reached --timeout {} s; stopping every instance", shown));
  reportHang(format("--timeout {} s", shown), ReportWhen::AnyCollective);
  beginStop(StopReason::Timeout, SIGTERM);
}

// While the job stops, once a second (debug log): what it waits for, so that a stop that takes
// long says which process it is waiting on.
void Supervisor::logWhoIsLeft(Clock::time_point now) {
  if (now < nextWaitingLog_) return;
  const bool first = nextWaitingLog_ == Clock::time_point{};
  nextWaitingLog_ = now + std::chrono::seconds(1);
  if (first) return;  // the stop has just begun
  for (const auto& inst : instances_) {
    if (!inst.reaped) {
      debugLog(format("still stopping: {} (pid {}) has not ended", nameOf(inst), inst.pid));
    } else if (!inst.groupGone) {
      debugLog(format("still stopping: {} ended, but its process group {} still has processes",
                      nameOf(inst), inst.pid));
    }
  }
  if (anyStreamOpen()) debugLog("still stopping: an instance's output is still open");
}

// While the job stops: SIGKILL once the grace period is over; true when every process is gone and
// its output read (or after one more second), or at the hard deadline.
bool Supervisor::stoppedAndGone(Clock::time_point now) {
  if (!killed_ && now >= killDeadline_) {
    debugLog("grace period over; sending SIGKILL to every process group still alive");
    signalGroups(SIGKILL);
    killed_ = true;
    record_.killedAtGraceEnd = true;
  }
  checkGroups();
  logWhoIsLeft(now);
  if (allGone()) {
    if (!drainDeadline_) drainDeadline_ = now + std::chrono::seconds(1);
    if (!anyStreamOpen() || now >= *drainDeadline_) return true;
  }
  if (now >= hardDeadline_) {
    router_.message("some processes of the job did not end in time; the watchdog will kill them");
    return true;
  }
  return false;
}

// Polls the signal pipe and every open stream, for at most until the next deadline, and handles
// what is ready.
void Supervisor::pollOnce(Clock::time_point now) {
  std::vector<pollfd> fds;
  fds.push_back({signalPipeReadFd(), POLLIN, 0});
  for (const auto& inst : instances_) {
    for (int s = 0; s < 2; ++s) {
      if (inst.fd[s] >= 0) fds.push_back({inst.fd[s], POLLIN, 0});
    }
  }
  const bool stopping = record_.stopReason != StopReason::None;
  auto wake = now + std::chrono::seconds(1);
  if (!stopping && timeoutAt_) wake = std::min(wake, *timeoutAt_);
  if (!stopping && growAt_ && !record_.growRequested) wake = std::min(wake, *growAt_);
  if (stopping) wake = std::min(wake, now + std::chrono::milliseconds(20));
  int timeoutMs = static_cast<int>(std::max<long>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1));
  int ready = ::poll(fds.data(), fds.size(), timeoutMs);
  if (ready < 0 && errno != EINTR) throw runtime_error("poll failed: {}", std::strerror(errno));
  if (ready > 0) {
    if (fds[0].revents & POLLIN) handleSignals();
    readReady(fds);
  }
}

JobOutcome Supervisor::run() {
  start_ = Clock::now();
  instances_.resize(spec_.envPerInstance.size());
  for (size_t i = 0; i < instances_.size(); ++i) instances_[i].index = static_cast<int>(i);
  router_.openFiles();

  // Held across the attempts of a job by SignalHandlers; else for this run only.
  std::optional<SignalScope> ownSignals;
  if (signalPipeReadFd() < 0) ownSignals.emplace();
  startJob();
  if (record_.notStartedBy != 0) {
    for (auto& inst : instances_) inst.reaped = inst.groupGone = true;
    record_.stopReason = StopReason::NotStarted;
    return finish();
  }
  if (spec_.timeoutSeconds) timeoutAt_ = after(start_, *spec_.timeoutSeconds);
  if (spec_.growAfterSeconds) growAt_ = after(start_, *spec_.growAfterSeconds);

  for (;;) {
    reap();
    auto now = Clock::now();
    requestGrowIfDue(now);
    stopIfTimedOut(now);
    if (record_.stopReason != StopReason::None && stoppedAndGone(now)) break;
    pollOnce(now);
  }
  return finish();
}

JobOutcome Supervisor::finish() {
  // Flush what is buffered, close everything.
  for (auto& inst : instances_) {
    for (int s = 0; s < 2; ++s) {
      if (inst.fd[s] >= 0) closeStream(inst, s);
    }
  }
  router_.closeFiles();
  if (watchdog_) {
    if (allGone()) watchdog_->release();  // clean end: the watchdog leaves without killing
    watchdog_.reset();                    // otherwise it kills what is left and removes cleanupDir
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  const std::vector<ProcessState> processes(instances_.begin(), instances_.end());
  return judgeJob(spec_, record_, processes, witness_,
                  [this](const std::string& line) { router_.message(line); });
}

}  // namespace

JobOutcome runJob(const LocalJobSpec& spec) {
  Supervisor supervisor(spec);
  return supervisor.run();
}

int runLocalJob(const LocalJobSpec& spec) {
  return runJob(spec).exitCode;
}

}  // namespace xtrain::launcher
