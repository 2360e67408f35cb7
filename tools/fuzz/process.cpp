#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "unique_fd.hpp"

namespace xfuzz {

namespace {
volatile sig_atomic_t gStop = 0;
}  // namespace

void requestStop() { gStop = 1; }
bool stopRequested() { return gStop != 0; }

std::string signalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return "SIG" + std::to_string(sig);
  }
}

std::string RunResult::describe() const {
  switch (ending) {
    case Ending::Exited: return "exit " + std::to_string(exitCode);
    case Ending::Signaled:
      return "killed by signal " + std::to_string(signal) + " (" + signalName(signal) + ")";
    case Ending::TimedOut:
      return "timeout after " + std::to_string(elapsed.count()) + " ms (process group killed)";
    case Ending::Interrupted: return "interrupted (xfuzz was told to stop)";
    case Ending::NotStarted: return "not started: " + error;
  }
  return "?";
}

namespace {

// Only async-signal-safe calls between fork and exec: the parent may have other threads' locks.
[[noreturn]] void execChild(const RunSpec& spec, char* const* argv, char* const* envp, int stdinFd,
                            int logFd, int errPipe) {
  setpgid(0, 0);
  if (chdir(spec.workDir.c_str()) != 0) {
    int e = errno;
    (void)!write(errPipe, &e, sizeof e);
    _exit(127);
  }
  dup2(stdinFd, 0);
  dup2(logFd, 1);
  dup2(logFd, 2);
  rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
  if (spec.addressSpaceMb > 0) {
    rlim_t bytes = static_cast<rlim_t>(spec.addressSpaceMb) * 1024 * 1024;
    rlimit as{bytes, bytes};
    setrlimit(RLIMIT_AS, &as);
  }
  // The harness may run with signals ignored or blocked (ctest, nohup); the tool gets defaults.
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  signal(SIGPIPE, SIG_DFL);
  execve(argv[0], argv, envp);
  int e = errno;
  (void)!write(errPipe, &e, sizeof e);
  _exit(127);
}

std::vector<std::string> mergedEnvironment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && extra.count(kv.substr(0, eq))) continue;
    out.push_back(std::move(kv));
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

RunResult runProcess(const RunSpec& spec) {
  RunResult r;
  const auto start = std::chrono::steady_clock::now();

  // Everything the child needs is built before fork (no allocation after it).
  std::vector<std::string> envStrings = mergedEnvironment(spec.env);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : envStrings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  UniqueFd logFd(open(spec.logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!logFd.valid()) {
    r.error = "cannot open log " + spec.logPath + ": " + std::strerror(errno);
    return r;
  }
  // stdin: the read end of a pipe whose write end is closed, so a tool reading stdin sees EOF.
  int inPipe[2], errPipe[2];
  if (pipe2(inPipe, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  UniqueFd inRead(inPipe[0]), inWrite(inPipe[1]);
  // exec failures come back through a close-on-exec pipe: EOF means exec succeeded.
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  UniqueFd errRead(errPipe[0]), errWrite(errPipe[1]);

  const pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) execChild(spec, argv.data(), envp.data(), inRead.get(), logFd.get(), errWrite.get());
  setpgid(pid, pid);  // also in the parent, so the group exists before any kill below
  inWrite.reset();
  errWrite.reset();
  logFd.reset();

  int execErrno = 0;
  ssize_t n;
  do n = read(errRead.get(), &execErrno, sizeof execErrno);
  while (n < 0 && errno == EINTR);

  // Poll for the end with a growing sleep: cheap for the many short runs, bounded by the timeout.
  bool timedOut = false, interrupted = false;
  long nap = 1;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT keeps the child a zombie, so its pid (= the group id) cannot be reused while the
    // group's stragglers are killed below.
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid)
      break;
    if (stopRequested() || std::chrono::steady_clock::now() - start >= spec.timeout) {
      interrupted = stopRequested();
      timedOut = !interrupted;
      kill(-pid, SIGKILL);
      // SIGKILL cannot be caught: the child ends; the loop's wait is bounded by the kernel.
      siginfo_t dead{};
      while (waitid(P_PID, static_cast<id_t>(pid), &dead, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
      }
      break;
    }
    sleepMs(nap);
    nap = std::min(nap * 2, 20L);
  }
  kill(-pid, SIGKILL);  // whatever the tool left running in its group
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);

  if (n == static_cast<ssize_t>(sizeof execErrno)) {
    r.ending = RunResult::Ending::NotStarted;
    r.error = "exec " + spec.argv[0] + ": " + std::strerror(execErrno);
  } else if (interrupted) {
    r.ending = RunResult::Ending::Interrupted;
  } else if (timedOut) {
    r.ending = RunResult::Ending::TimedOut;
  } else if (WIFEXITED(status)) {
    r.ending = RunResult::Ending::Exited;
    r.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.ending = RunResult::Ending::Signaled;
    r.signal = WTERMSIG(status);
  }
  return r;
}

}  // namespace xfuzz
