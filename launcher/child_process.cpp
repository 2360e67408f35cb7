#include "launcher/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/job_signals.hpp"
#include "xtrain/error.hpp"

namespace xtrain::launcher {

ExecArrays makeExecArrays(const std::vector<std::string>& argv,
                          const std::vector<std::string>& envp) {
  ExecArrays a;
  for (const auto& s : argv) a.argv.push_back(const_cast<char*>(s.c_str()));
  a.argv.push_back(nullptr);
  for (const auto& s : envp) a.envp.push_back(const_cast<char*>(s.c_str()));
  a.envp.push_back(nullptr);
  return a;
}

ForkedChild forkChild(const std::string& executable, const ExecArrays& exec, int devNull,
                      bool ownSession, int index) {
  int out[2], err[2], status[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(status, O_CLOEXEC) != 0) {
    throw runtime_error("cannot create pipes for instance {}: {}", index, std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw runtime_error("cannot fork instance {}: {}", index, std::strerror(errno));
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    if (ownSession) {
      ::setsid();  // the engine's session holds every process it starts here
    } else {
      ::setpgid(0, 0);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    defaultSignalsInChild();
    ::dup2(devNull, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(executable.c_str(), exec.argv.data(), exec.envp.data());
    int e = errno;
    [[maybe_unused]] ssize_t n = ::write(status[1], &e, sizeof e);
    ::_exit(127);
  }
  if (!ownSession) ::setpgid(pid, pid);  // also here, so signalling the group works at once
  ::close(out[1]);
  ::close(err[1]);
  ::close(status[1]);
  return ForkedChild{pid, out[0], err[0], status[0]};
}

int awaitExec(ForkedChild& child) {
  int childErrno = 0;
  ssize_t n;
  do {
    n = ::read(child.execStatusFd, &childErrno, sizeof childErrno);
  } while (n < 0 && errno == EINTR);
  ::close(child.execStatusFd);
  child.execStatusFd = -1;
  return n == static_cast<ssize_t>(sizeof childErrno) ? childErrno : 0;
}

}  // namespace xtrain::launcher
