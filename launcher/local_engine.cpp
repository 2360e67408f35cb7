#include "launcher/local_engine.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "launcher/failure_clues.hpp"
#include "launcher/hang_report.hpp"
#include "launcher/watchdog.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::launcher {

static_assert(kPreemptedExitCode == dist::kPreemptedExitCode);

std::string signalName(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(sig);
  }
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + signalName(sig) + ")";
  }
  return "ended with status " + std::to_string(status);
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
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

// ---- signals: a self-pipe the handler writes the signal number into ----

int gSignalPipe[2] = {-1, -1};
constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};

// The first signal that asks the job to end (SignalHandlers::endRequested): written by the handler
// itself, not read from the pipe later, so that it is set before any code can decide to start
// instances after the signal came.
volatile sig_atomic_t gEndSignal = 0;

bool endsTheJob(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2;
}

extern "C" void onSignal(int sig) {
  int saved = errno;
  if (gEndSignal == 0 && endsTheJob(sig)) gEndSignal = sig;
  unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(gSignalPipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

// Installs the handlers for the job's duration (or, held by SignalHandlers, for every attempt of a
// job); restores the old ones on destruction.
class SignalScope {
 public:
  SignalScope() {
    if (::pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw runtime_error("xrun: cannot create a pipe: {}", std::strerror(errno));
    }
    gEndSignal = 0;
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kHandledSignals); ++i) {
      int sig = kHandledSignals[i];
      struct sigaction withFlags = sa;
      if (sig == SIGCHLD) withFlags.sa_flags |= SA_NOCLDSTOP;
      ::sigaction(sig, &withFlags, &old_[i]);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &oldPipe_);
  }
  ~SignalScope() {
    for (size_t i = 0; i < std::size(kHandledSignals); ++i)
      ::sigaction(kHandledSignals[i], &old_[i], nullptr);
    ::sigaction(SIGPIPE, &oldPipe_, nullptr);
    ::close(gSignalPipe[0]);
    ::close(gSignalPipe[1]);
    gSignalPipe[0] = gSignalPipe[1] = -1;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int readFd() const { return gSignalPipe[0]; }

 private:
  struct sigaction old_[std::size(kHandledSignals)]{};
  struct sigaction oldPipe_ {};
};

namespace {

// Blocks the handled signals while forking so a handler never runs in a child before exec.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kHandledSignals) sigaddset(&set, sig);
    ::sigprocmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockSignals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;

 private:
  sigset_t old_;
};

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// ---- one instance ----

struct Instance {
  int index = 0;
  pid_t pid = -1;
  bool reaped = false;
  bool groupGone = false;
  int status = 0;
  int fd[2] = {-1, -1};  // read ends: stdout, stderr
  LineSplitter splitter[2];
  LineTail errTail{3};
};

// Prepared before fork: the child only touches these raw arrays.
struct ExecArrays {
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecArrays makeExecArrays(const std::vector<std::string>& argv,
                          const std::vector<std::string>& envp) {
  ExecArrays a;
  for (const auto& s : argv) a.argv.push_back(const_cast<char*>(s.c_str()));
  a.argv.push_back(nullptr);
  for (const auto& s : envp) a.envp.push_back(const_cast<char*>(s.c_str()));
  a.envp.push_back(nullptr);
  return a;
}

// Preempted: an instance exited with kPreemptedExitCode while nothing else was stopping the job.
// NotStarted: a signal that ends the job came before the instances were started.
enum class StopReason { None, Failure, Finished, Timeout, Signal, Preempted, NotStarted };

class Supervisor {
 public:
  explicit Supervisor(const LocalJobSpec& spec) : spec_(spec) {}
  ~Supervisor() {
    for (auto& inst : instances_) {
      for (int s = 0; s < 2; ++s) closeFd(inst.fd[s]);
    }
    for (auto& f : files_) {
      for (int s = 0; s < 2; ++s) closeFd(f[s]);
    }
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  JobOutcome run();

 private:
  void startAll();
  void startOne(Instance& inst, const ExecArrays& exec, int devNull);
  void handleSignals();
  void reap();
  void readReady(const std::vector<pollfd>& fds);
  void readFrom(Instance& inst, int stream);
  void emit(Instance& inst, int stream, const std::string& line);
  void emitEngineLine(Instance& engine, int stream, const std::string& line);
  void emitOwnLine(Instance& engine, int stream, const std::string& line);
  // Notes the suspects an instance's error line names (didNotArrive_), once.
  void noteInstanceError(std::string_view line);
  void emitInstanceLine(Instance& engine, int stream, int instance, std::string_view tag,
                        std::string_view text);
  void writeFile(int instance, int stream, std::string_view text);
  void print(Stream s, const std::string& text);
  std::string engineFailureText(const Instance& engine) const;
  void closeStream(Instance& inst, int stream);
  void beginStop(StopReason reason, int termSignal);
  std::optional<int> preemptionOutcome();
  void signalGroups(int sig);
  void checkGroups();
  bool allGone() const;
  bool anyStreamOpen() const;
  void message(const std::string& text);
  enum class ReportWhen { CollectiveFailed, AnyCollective, Always };
  void reportHang(const std::string& why, ReportWhen when);
  JobOutcome finish();

  const LocalJobSpec& spec_;
  const bool engineMode_ = spec_.engine.has_value();
  std::vector<Instance> instances_;        // engine mode: one, the engine
  std::vector<std::array<int, 2>> files_;  // --output-dir: per instance, stdout and stderr
  std::vector<LineTail> engineTails_;      // engine mode: per instance, its last stderr lines
  std::optional<int> blamed_;              // engine mode: the instance its failure report names
  std::string lostHost_;  // mpirun: the host whose daemon it lost ("Remote daemon: ... on node h2")
  // The instances the first collective timeout reported on an instance's stderr names as not
  // arrived ("ranks [2, 3] did not arrive"): suspects of a hang or a lost host.
  std::vector<int> didNotArrive_;
  MpirunLineJoiner joiners_[2];  // engine mpirun: stdout, stderr
  std::optional<Watchdog> watchdog_;
  bool stdoutBroken_ = false;
  bool stderrBroken_ = false;

  StopReason stopReason_ = StopReason::None;
  int stopSignal_ = 0;          // Signal: which one xrun received
  int warnedWith_ = 0;          // the first SIGUSR1/SIGUSR2 xrun forwarded, if any
  bool growRequested_ = false;  // SIGUSR1 sent for --grow-after (not a warning xrun received)
  int notStartedBy_ = 0;        // the signal that ended the job before startAll started anything
  int firstFailure_ = -1;
  int startExitCode_ = 1;  // when an instance could not be started
  int runningAtFailure_ = 0;
  bool killed_ = false;
  bool killedAtGraceEnd_ = false;  // killed_ because the grace period ended (not a second signal)
  Clock::time_point start_;
  Clock::time_point killDeadline_;
  Clock::time_point hardDeadline_;
  std::optional<Clock::time_point> drainDeadline_;
};

void Supervisor::message(const std::string& text) {
  if (!stderrBroken_ && !writeAll(spec_.stderrFd, "xrun: " + text + "\n")) stderrBroken_ = true;
}

// The job-wide hang report (launcher/hang_report.hpp), printed on stderr.
void Supervisor::reportHang(const std::string& why, ReportWhen when) {
  if (spec_.traceDir.empty()) {
    if (when == ReportWhen::Always) {
      message("hang report (" + why +
              "): not available: the instances may run on other hosts, so xrun has no job "
              "directory where they record their collectives");
    }
    return;
  }
  try {
    const int n = engineMode_ ? spec_.engine->numInstances : static_cast<int>(instances_.size());
    const auto traces = readTraces(spec_.traceDir, n);
    if (when == ReportWhen::CollectiveFailed && !hasCollectiveFailure(traces)) return;
    if (when == ReportWhen::AnyCollective && !hasAnyCollective(traces)) return;
    for (const auto& line : hangReport(traces, steadyNowNs(), why)) message(line);
  } catch (const std::exception& e) {
    message("hang report (" + why + "): cannot be made: " + e.what());
  }
}

void Supervisor::startOne(Instance& inst, const ExecArrays& exec, int devNull) {
  int out[2], err[2], status[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(status, O_CLOEXEC) != 0) {
    throw runtime_error("cannot create pipes for instance {}: {}", inst.index,
                        std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw runtime_error("cannot fork instance {}: {}", inst.index, std::strerror(errno));
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    if (engineMode_) {
      ::setsid();  // the engine's session holds every process it starts here
    } else {
      ::setpgid(0, 0);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig : kHandledSignals) ::sigaction(sig, &dfl, nullptr);
    ::sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(devNull, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(spec_.executable.c_str(), exec.argv.data(), exec.envp.data());
    int e = errno;
    [[maybe_unused]] ssize_t n = ::write(status[1], &e, sizeof e);
    ::_exit(127);
  }
  if (!engineMode_) ::setpgid(pid, pid);  // also here, so signalling the group works at once
  inst.pid = pid;
  ::close(out[1]);
  ::close(err[1]);
  ::close(status[1]);
  inst.fd[0] = out[0];
  inst.fd[1] = err[0];
  if (watchdog_) {
    if (engineMode_) {
      watchdog_->watchSession(pid);
    } else {
      watchdog_->watch(pid);
    }
  }

  int childErrno = 0;
  ssize_t n;
  do {
    n = ::read(status[0], &childErrno, sizeof childErrno);
  } while (n < 0 && errno == EINTR);
  ::close(status[0]);
  if (n == static_cast<ssize_t>(sizeof childErrno)) {
    startExitCode_ = childErrno == ENOENT ? 127 : 126;
    if (engineMode_) {
      throw runtime_error("cannot start {} ({}): {}", spec_.engine->name, spec_.executable,
                          std::strerror(childErrno));
    }
    throw runtime_error("cannot start instance {} ({}): {}", inst.index, spec_.executable,
                        std::strerror(childErrno));
  }
}

void Supervisor::startAll() {
  int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) throw runtime_error("cannot open /dev/null: {}", std::strerror(errno));
  std::vector<ExecArrays> exec;
  for (const auto& env : spec_.envPerInstance) exec.push_back(makeExecArrays(spec_.argv, env));

  BlockSignals block;
  // With the signals blocked, no handler runs until every instance is started: a signal that came
  // before is seen here and nothing starts; one that comes after is forwarded to the instances.
  if (gEndSignal != 0) {
    notStartedBy_ = gEndSignal;
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

void Supervisor::print(Stream s, const std::string& text) {
  if (s == Stream::Stdout) {
    if (!stdoutBroken_ && !writeAll(spec_.stdoutFd, text)) stdoutBroken_ = true;
  } else {
    if (!stderrBroken_ && !writeAll(spec_.stderrFd, text)) stderrBroken_ = true;
  }
}

void Supervisor::writeFile(int instance, int stream, std::string_view text) {
  if (instance < 0 || static_cast<size_t>(instance) >= files_.size()) return;
  int& fd = files_[static_cast<size_t>(instance)][static_cast<size_t>(stream)];
  if (fd < 0) return;
  std::string raw(text);
  raw.push_back('\n');
  if (!writeAll(fd, raw)) closeFd(fd);
}

void Supervisor::emit(Instance& inst, int stream, const std::string& line) {
  if (engineMode_) {
    emitEngineLine(inst, stream, line);
    return;
  }
  Stream s = stream == 0 ? Stream::Stdout : Stream::Stderr;
  if (s == Stream::Stderr) noteInstanceError(line);
  if (s == Stream::Stderr) inst.errTail.push(line);
  writeFile(inst.index, stream, line);
  if (!shouldPrint(spec_.output, inst.index, s, line)) return;
  print(s, renderLine(spec_.output, inst.index, s, line));
}

// Lines of dashes and blank lines frame mpirun's reports; they say nothing in a root-cause line.
bool isDecoration(std::string_view line) {
  return line.find_first_not_of(" \t-=*") == std::string_view::npos;
}

void Supervisor::emitEngineLine(Instance& engine, int stream, const std::string& line) {
  if (spec_.engine->tag == EngineTag::Mpirun) {
    std::vector<MpirunLineJoiner::Line> lines;
    joiners_[stream].feed(line, lines);
    for (const auto& l : lines) {
      if (l.instance) {
        emitInstanceLine(engine, stream, *l.instance, l.tag, l.text);
      } else {
        emitOwnLine(engine, stream, l.text);
      }
    }
    return;
  }
  auto tagged = parseEngineLine(spec_.engine->tag, line);
  if (!tagged) {
    emitOwnLine(engine, stream, line);
    return;
  }
  std::string_view whole(line);
  emitInstanceLine(engine, stream, tagged->instance,
                   whole.substr(0, whole.size() - tagged->text.size()), tagged->text);
}

// The engine's own message: always printed, as it is.
void Supervisor::emitOwnLine(Instance& engine, int stream, const std::string& line) {
  Stream s = stream == 0 ? Stream::Stdout : Stream::Stderr;
  if (s == Stream::Stderr && !isDecoration(line)) {
    engine.errTail.push(line);
    if (!blamed_) blamed_ = instanceBlamedBy(spec_.engine->tag, line);
    // Open MPI: "ORTE has lost communication with a remote daemon." ... "Remote daemon:
    // [[43993,0],1] on node h2" (a cut link, a dead host).
    if (spec_.engine->tag == EngineTag::Mpirun && lostHost_.empty()) {
      lostHost_ = hostLostByMpirun(line);
    }
  }
  print(s, line + "\n");
}

void Supervisor::noteInstanceError(std::string_view line) {
  if (!didNotArrive_.empty()) return;
  const int n = engineMode_ ? spec_.engine->numInstances : static_cast<int>(instances_.size());
  didNotArrive_ = instancesThatDidNotArrive(line, n);
}

void Supervisor::emitInstanceLine(Instance& engine, int stream, int instance, std::string_view tag,
                                  std::string_view text) {
  if (instance < 0 || instance >= spec_.engine->numInstances) {
    emitOwnLine(engine, stream, std::string(tag) + std::string(text));
    return;
  }
  Stream s = stream == 0 ? Stream::Stdout : Stream::Stderr;
  if (s == Stream::Stderr) {
    noteInstanceError(text);
    engineTails_[static_cast<size_t>(instance)].push(std::string(text));
  }
  writeFile(instance, stream, text);
  if (!shouldPrint(spec_.output, instance, s, text)) return;
  std::string out;
  if (spec_.output.tag) out = tag;
  out.append(text);
  out.push_back('\n');
  print(s, out);
}

void Supervisor::closeStream(Instance& inst, int stream) {
  if (auto rest = inst.splitter[stream].finish()) emit(inst, stream, *rest);
  if (engineMode_ && spec_.engine->tag == EngineTag::Mpirun) {
    std::vector<MpirunLineJoiner::Line> lines;
    joiners_[stream].finish(lines);
    for (const auto& l : lines) {
      if (l.instance) {
        emitInstanceLine(inst, stream, *l.instance, l.tag, l.text);
      } else {
        emitOwnLine(inst, stream, l.text);
      }
    }
  }
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
  std::vector<std::string> lines;
  inst.splitter[stream].feed(std::string_view(buffer, static_cast<size_t>(n)), lines);
  for (const auto& line : lines) emit(inst, stream, line);
}

void Supervisor::readReady(const std::vector<pollfd>& fds) {
  for (const auto& p : fds) {
    if (p.fd == gSignalPipe[0] || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
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
  if (stopReason_ != StopReason::None) return;
  stopReason_ = reason;
  auto now = Clock::now();
  // A preemption request leaves the instances the time to save their state; anything else ends the
  // job promptly.
  const bool preemption =
      reason == StopReason::Preempted || (reason == StopReason::Signal && termSignal == SIGTERM);
  const double seconds = preemption ? spec_.preemptionGraceSeconds : spec_.gracePeriodSeconds;
  auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  killDeadline_ = now + grace;
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
    debugLog(format("{} (pid {}) {}",
                    engineMode_ ? spec_.engine->name : "instance " + std::to_string(inst.index),
                    inst.pid, describeStatus(status)));
    // The engine ended while the job was stopping: what it left in its session is asked to end
    // now rather than at the grace period's end.
    if (engineMode_ && stopReason_ != StopReason::None && !killed_) {
      signalSession(inst.pid, SIGTERM);
    }
    bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // (Not SIGTERM: that is what xrun has just sent the others.)
    if (failed && blamedAnExitThisPass && WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM &&
        stopReason_ == StopReason::Failure && !killed_ && !engineMode_) {
      firstFailure_ = inst.index;
      blamedAnExitThisPass = false;
      continue;
    }
    if (failed && stopReason_ == StopReason::None && WIFEXITED(status) &&
        WEXITSTATUS(status) == kPreemptedExitCode) {
      // It saved its state after a preemption request; the others stop after the same step (they
      // agree on it), so they get the grace period to end by themselves.
      firstFailure_ = inst.index;
      debugLog(
          format("{} (pid {}) was preempted (exit code {}); waiting up to {} s "
                 "(--grace-period) for the others to end",
                 engineMode_ ? spec_.engine->name : "instance " + std::to_string(inst.index),
                 inst.pid, kPreemptedExitCode, spec_.preemptionGraceSeconds));
      beginStop(StopReason::Preempted, 0);
    } else if (failed && stopReason_ == StopReason::None) {
      firstFailure_ = inst.index;
      blamedAnExitThisPass = WIFEXITED(status);
      runningAtFailure_ = static_cast<int>(std::count_if(
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
  if (allReaped && stopReason_ == StopReason::None) beginStop(StopReason::Finished, SIGTERM);
}

void Supervisor::handleSignals() {
  unsigned char buf[64];
  for (;;) {
    ssize_t n = ::read(gSignalPipe[0], buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t k = 0; k < n; ++k) {
      int sig = buf[k];
      if (sig == SIGCHLD) continue;  // reap() runs on every loop iteration
      if (sig == SIGQUIT) {
        reportHang("SIGQUIT; the job goes on", ReportWhen::Always);
        continue;
      }
      if (sig == SIGUSR1 || sig == SIGUSR2) {
        if (warnedWith_ == 0) warnedWith_ = sig;
        for (auto& inst : instances_) {
          if (!inst.reaped) ::kill(inst.pid, sig);
        }
        message("received " + signalName(sig) + "; forwarded to " +
                (engineMode_ ? spec_.engine->name + ", which passes it to every instance"
                             : std::string("every instance")));
        continue;
      }
      // SIGINT, SIGTERM, SIGHUP: forward to every group and end the job; again: kill at once.
      if (stopReason_ == StopReason::None) {
        message("received " + signalName(sig) + "; forwarding it to " +
                (engineMode_ ? spec_.engine->name : std::string("every instance")) +
                " and ending the job" +
                (sig == SIGTERM
                     ? format(" (SIGKILL after --grace-period {} s)", spec_.preemptionGraceSeconds)
                     : std::string()));
        stopSignal_ = sig;
        beginStop(StopReason::Signal, sig);
      } else if (sig == SIGTERM && stopReason_ == StopReason::Preempted && !killed_) {
        // The instances are already stopping at a checkpoint for a preemption request (one exited
        // 75): this is the same request. Killing them now would lose the checkpoint they write.
        message(format(
            "received SIGTERM while the instances stop at a checkpoint; they keep the rest of "
            "--grace-period {} s",
            spec_.preemptionGraceSeconds));
      } else if (!killed_) {
        // Already stopping (a signal, a failure or the timeout): the user wants it over now.
        message("received " + signalName(sig) + " while stopping the job; killing every instance");
        signalGroups(SIGKILL);
        killed_ = true;
      }
    }
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

JobOutcome Supervisor::run() {
  start_ = Clock::now();
  instances_.resize(spec_.envPerInstance.size());
  for (size_t i = 0; i < instances_.size(); ++i) instances_[i].index = static_cast<int>(i);
  const size_t numInstances =
      engineMode_ ? static_cast<size_t>(spec_.engine->numInstances) : instances_.size();
  if (engineMode_) engineTails_.assign(numInstances, LineTail(3));

  if (!spec_.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(spec_.outputDir, ec);
    files_.assign(numInstances, {-1, -1});
    for (size_t i = 0; i < numInstances; ++i) {
      for (int s = 0; s < 2; ++s) {
        std::string path =
            spec_.outputDir + "/instance-" + std::to_string(i) + (s == 0 ? ".out" : ".err");
        int& fd = files_[i][static_cast<size_t>(s)];
        // Never through a planted symbolic link, never into a file another user owns (an
        // output directory in a shared /tmp): the mode itself is the user's umask's.
        fd = ::open(
            path.c_str(),
            O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (spec_.appendOutput ? O_APPEND : 0),
            0644);
        if (fd < 0) {
          throw runtime_error("--output-dir: cannot write {}: {}{}", path, std::strerror(errno),
                              errno == ELOOP ? " (it is a symbolic link, which xrun refuses)" : "");
        }
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
          ::close(fd);
          fd = -1;
          throw runtime_error(
              "--output-dir: {} is not a regular file of yours (uid {}); remove it or choose "
              "another directory",
              path, static_cast<unsigned>(::geteuid()));
        }
        if (!spec_.appendOutput && ::ftruncate(fd, 0) != 0) {
          throw runtime_error("--output-dir: cannot truncate {}: {}", path, std::strerror(errno));
        }
      }
    }
  }

  // Held across the attempts of a job by SignalHandlers; else for this run only.
  std::optional<SignalScope> ownSignals;
  if (gSignalPipe[0] < 0) ownSignals.emplace();
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  watchdog_.emplace(spec_.cleanupDir);
  try {
    startAll();
  } catch (const std::exception& e) {
    message(e.what());
    beginStop(StopReason::Failure, SIGKILL);
    firstFailure_ = -2;  // nothing to blame: the start failed
    for (auto& inst : instances_) {
      if (inst.pid <= 0) inst.reaped = inst.groupGone = true;
    }
  }

  if (notStartedBy_ != 0) {
    for (auto& inst : instances_) inst.reaped = inst.groupGone = true;
    stopReason_ = StopReason::NotStarted;
    return finish();
  }

  std::optional<Clock::time_point> timeoutAt;
  if (spec_.timeoutSeconds) {
    timeoutAt = start_ + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(*spec_.timeoutSeconds));
  }

  std::optional<Clock::time_point> growAt;
  if (spec_.growAfterSeconds) {
    growAt = start_ + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(*spec_.growAfterSeconds));
  }

  for (;;) {
    reap();
    auto now = Clock::now();
    if (stopReason_ == StopReason::None && growAt && !growRequested_ && now >= *growAt) {
      // As a scheduler's warning would: the instances stop after a whole step, at a checkpoint.
      message(spec_.growMessage);
      growRequested_ = true;
      for (auto& inst : instances_) {
        if (!inst.reaped) ::kill(inst.pid, SIGUSR1);
      }
    }
    if (stopReason_ == StopReason::None && timeoutAt && now >= *timeoutAt) {
      message(format("the job reached --timeout {} s; stopping every instance",
                     spec_.timeoutShownSeconds.value_or(*spec_.timeoutSeconds)));
      reportHang(
          format("--timeout {} s", spec_.timeoutShownSeconds.value_or(*spec_.timeoutSeconds)),
          ReportWhen::AnyCollective);
      beginStop(StopReason::Timeout, SIGTERM);
    }
    if (stopReason_ != StopReason::None) {
      if (!killed_ && now >= killDeadline_) {
        debugLog("grace period over; sending SIGKILL to every process group still alive");
        signalGroups(SIGKILL);
        killed_ = true;
        killedAtGraceEnd_ = true;
      }
      checkGroups();
      if (allGone()) {
        if (!drainDeadline_) drainDeadline_ = now + std::chrono::seconds(1);
        if (!anyStreamOpen() || now >= *drainDeadline_) break;
      }
      if (now >= hardDeadline_) {
        message("some processes of the job did not end in time; the watchdog will kill them");
        break;
      }
    }

    // Poll: the signal pipe and every open stream, for at most until the next deadline.
    std::vector<pollfd> fds;
    fds.push_back({gSignalPipe[0], POLLIN, 0});
    for (const auto& inst : instances_) {
      for (int s = 0; s < 2; ++s) {
        if (inst.fd[s] >= 0) fds.push_back({inst.fd[s], POLLIN, 0});
      }
    }
    auto wake = now + std::chrono::seconds(1);
    if (stopReason_ == StopReason::None && timeoutAt) wake = std::min(wake, *timeoutAt);
    if (stopReason_ == StopReason::None && growAt && !growRequested_) {
      wake = std::min(wake, *growAt);
    }
    if (stopReason_ != StopReason::None) wake = std::min(wake, now + std::chrono::milliseconds(20));
    int timeoutMs = static_cast<int>(std::max<long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1));
    int ready = ::poll(fds.data(), fds.size(), timeoutMs);
    if (ready < 0 && errno != EINTR) throw runtime_error("poll failed: {}", std::strerror(errno));
    if (ready > 0) {
      if (fds[0].revents & POLLIN) handleSignals();
      readReady(fds);
    }
  }
  return finish();
}

// "mpirun (pid 42) exited with code 3; it names instance 2 as the first to fail; its last stderr
// lines: ..." (the instance's own, else the engine's).
std::string Supervisor::engineFailureText(const Instance& engine) const {
  std::string text =
      format("{} (pid {}) {}", spec_.engine->name, engine.pid, describeStatus(engine.status));
  const LineTail* tail = &engine.errTail;
  std::string whose = spec_.engine->name + "'s";
  if (blamed_ && *blamed_ >= 0 && static_cast<size_t>(*blamed_) < engineTails_.size()) {
    text += format("; it names instance {} as the first to fail", *blamed_);
    const LineTail& own = engineTails_[static_cast<size_t>(*blamed_)];
    if (!own.lines().empty()) {
      tail = &own;
      whose = "the instance's";
    }
  }
  if (!lostHost_.empty()) {
    std::string which;
    const auto& hosts = spec_.engine->hostOfInstance;
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (hosts[i] == lostHost_) which += (which.empty() ? "" : ", ") + std::to_string(i);
    }
    text += format("; it lost contact with host {}", lostHost_);
    if (!which.empty()) {
      text += format(" (instance{} {}: unreachable, or their host or daemon died)",
                     which.find(',') == std::string::npos ? "" : "s", which);
    }
  }
  if (tail->lines().empty()) return text + "; nothing on stderr";
  text += "; " + whose + " last stderr lines:";
  bool first = true;
  for (const auto& line : tail->lines()) {
    std::string shown = line.size() > 300 ? line.substr(0, 300) + "..." : line;
    text += (first ? " \"" : " | \"") + shown + "\"";
    first = false;
  }
  return text;
}

// After a preemption request: kPreemptedExitCode when every instance (engine mode: the engine)
// exited 0 or with that code, at least one with it, saying so; otherwise nothing (the usual exit
// code applies) after naming the instances the grace period's SIGKILL ended.
std::optional<int> Supervisor::preemptionOutcome() {
  int preempted = 0;
  bool clean = true;
  for (const Instance& inst : instances_) {
    if (!inst.reaped) {
      clean = false;  // still running past the hard deadline: the watchdog ends it
    } else if (WIFEXITED(inst.status) && WEXITSTATUS(inst.status) == kPreemptedExitCode) {
      ++preempted;
    } else if (!(WIFEXITED(inst.status) && WEXITSTATUS(inst.status) == 0)) {
      clean = false;
      if (killedAtGraceEnd_ && stopReason_ == StopReason::Signal && WIFSIGNALED(inst.status) &&
          WTERMSIG(inst.status) == SIGKILL) {
        message(format("{} (pid {}) did not end within the grace period ({} s) and was killed",
                       engineMode_ ? spec_.engine->name : "instance " + std::to_string(inst.index),
                       inst.pid, spec_.preemptionGraceSeconds));
      }
    }
  }
  if (!clean || preempted == 0) return std::nullopt;
  if (engineMode_) {
    message(
        format("the job was preempted: {} exited with code {}, as its instances did; run it "
               "again to continue",
               spec_.engine->name, kPreemptedExitCode));
  } else {
    message(
        format("the job was preempted: {} of {} instances exited with code {}; run it again to "
               "continue",
               preempted, instances_.size(), kPreemptedExitCode));
  }
  return kPreemptedExitCode;
}

JobOutcome Supervisor::finish() {
  // Flush what is buffered, close everything.
  for (auto& inst : instances_) {
    for (int s = 0; s < 2; ++s) {
      if (inst.fd[s] >= 0) closeStream(inst, s);
    }
  }
  for (auto& f : files_) {
    for (int s = 0; s < 2; ++s) closeFd(f[s]);
  }
  if (watchdog_) {
    if (allGone()) watchdog_->release();  // clean end: the watchdog leaves without killing
    watchdog_.reset();                    // otherwise it kills what is left and removes cleanupDir
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);

  JobOutcome outcome;
  outcome.forwardedSignal = warnedWith_;
  outcome.lostHost = lostHost_;
  outcome.didNotArrive = didNotArrive_;
  outcome.growRequested = growRequested_;
  switch (stopReason_) {
    case StopReason::Failure: {
      if (firstFailure_ < 0) {
        outcome.end = JobEnd::StartFailed;
        outcome.exitCode = startExitCode_;
        outcome.what = "could not be started";
        return outcome;
      }
      const Instance& f = instances_[static_cast<size_t>(firstFailure_)];
      outcome.end = JobEnd::InstanceFailed;
      outcome.exitCode = exitCodeOf(f.status);
      if (engineMode_) {
        message(engineFailureText(f));
        if (blamed_ && *blamed_ >= 0 && *blamed_ < spec_.engine->numInstances) {
          outcome.instance = *blamed_;
        }
        outcome.what =
            format("{} (pid {}) {}", spec_.engine->name, f.pid, describeStatus(f.status));
        return outcome;
      }
      outcome.instance = f.index;
      outcome.what = describeStatus(f.status);
      std::string text =
          format("instance {} (pid {}) {}", f.index, f.pid, describeStatus(f.status));
      if (runningAtFailure_ > 0) {
        text += format(", the first to fail; stopped the other {} running", runningAtFailure_);
      }
      if (f.errTail.lines().empty()) {
        text += "; it wrote nothing on stderr";
      } else {
        text += "; its last stderr lines:";
        bool first = true;
        for (const auto& line : f.errTail.lines()) {
          std::string shown = line.size() > 300 ? line.substr(0, 300) + "..." : line;
          text += (first ? " \"" : " | \"") + shown + "\"";
          first = false;
        }
      }
      message(text);
      return outcome;
    }
    case StopReason::Timeout:
      outcome.end = JobEnd::Timeout;
      outcome.exitCode = kTimeoutExitCode;
      return outcome;
    case StopReason::Signal:
      if (auto code = preemptionOutcome()) {
        outcome.end = JobEnd::Preempted;
        outcome.exitCode = *code;
        return outcome;
      }
      outcome.end = JobEnd::Signal;
      outcome.exitCode = 128 + stopSignal_;
      return outcome;
    case StopReason::Preempted: {
      outcome.end = JobEnd::Preempted;
      outcome.exitCode = kPreemptedExitCode;
      if (auto code = preemptionOutcome()) {
        outcome.exitCode = *code;
        return outcome;
      }
      // Some instance did not follow: its end is the job's.
      for (const Instance& inst : instances_) {
        if (inst.reaped && WIFEXITED(inst.status) &&
            (WEXITSTATUS(inst.status) == 0 || WEXITSTATUS(inst.status) == kPreemptedExitCode)) {
          continue;
        }
        message(format(
            "instance {} (pid {}) {} after instance {} was preempted", inst.index, inst.pid,
            !inst.reaped ? std::string("is still running")
            : killedAtGraceEnd_ && WIFSIGNALED(inst.status) && WTERMSIG(inst.status) == SIGKILL
                ? format("did not end within --grace-period {} s and was killed",
                         spec_.preemptionGraceSeconds)
                : describeStatus(inst.status),
            firstFailure_));
        outcome.exitCode = inst.reaped ? exitCodeOf(inst.status) : 128 + SIGKILL;
        return outcome;
      }
      return outcome;
    }
    case StopReason::NotStarted:
      outcome.end = JobEnd::NotStarted;
      outcome.endSignal = notStartedBy_;
      outcome.exitCode = exitCodeForSignalBeforeStart(notStartedBy_);
      return outcome;
    case StopReason::Finished:
    case StopReason::None: return outcome;
  }
  return outcome;
}

}  // namespace

JobOutcome runJob(const LocalJobSpec& spec) {
  Supervisor supervisor(spec);
  return supervisor.run();
}

int runLocalJob(const LocalJobSpec& spec) {
  return runJob(spec).exitCode;
}

SignalHandlers::SignalHandlers() : scope_(std::make_unique<SignalScope>()) {}

SignalHandlers::~SignalHandlers() = default;

int SignalHandlers::endRequested() const {
  return gEndSignal;
}

int exitCodeForSignalBeforeStart(int sig) {
  return sig == SIGTERM || sig == SIGUSR1 || sig == SIGUSR2 ? kPreemptedExitCode : 128 + sig;
}

int SignalHandlers::waitForSignal(double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, seconds)));
  for (;;) {
    unsigned char sig = 0;
    while (::read(scope_->readFd(), &sig, 1) == 1) {
      if (sig != SIGCHLD) return sig;
    }
    const auto now = Clock::now();
    if (now >= deadline) return 0;
    pollfd p{scope_->readFd(), POLLIN, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    ::poll(&p, 1, static_cast<int>(std::min<long>(ms + 1, 1000)));
  }
}

}  // namespace xtrain::launcher
