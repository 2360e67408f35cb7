#include "launcher/watchdog.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::launcher {

namespace {

[[noreturn]] void watchdogMain(int readFd, const std::string& cleanupDir) {
  ::setpgid(0, 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE})
    ::sigaction(sig, &ignore, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGCHLD, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  // Hold nothing of xrun's: no terminal, no pipes a reader waits on.
  if (readFd != 3) {
    ::dup2(readFd, 3);
    readFd = 3;
  }
  if (::close_range(4, ~0U, 0) != 0) {
    long maxFd = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
    for (int fd = 4; fd < maxFd; ++fd) ::close(fd);
  }
  for (int fd = 0; fd <= 2; ++fd) ::close(fd);
  int devNull = ::open("/dev/null", O_RDWR);
  if (devNull >= 0) {
    ::dup2(devNull, 0);
    ::dup2(devNull, 1);
    ::dup2(devNull, 2);
    if (devNull > 2) ::close(devNull);
  }

  std::vector<int32_t> groups;
  bool released = false;
  for (;;) {
    int32_t value = 0;
    ssize_t n = ::read(readFd, &value, sizeof value);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof value)) break;  // EOF: xrun is gone
    if (value > 0) {
      groups.push_back(value);
    } else if (value < 0) {
      groups.erase(std::remove(groups.begin(), groups.end(), -value), groups.end());
    } else {
      released = true;
    }
  }
  if (!released) {
    for (int32_t g : groups) ::kill(-g, SIGKILL);
    if (!cleanupDir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(cleanupDir, ec);
    }
  }
  ::_exit(0);
}

}  // namespace

Watchdog::Watchdog(const std::string& cleanupDir) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw runtime_error("cannot create the watchdog pipe: {}", std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw runtime_error("cannot fork the watchdog: {}", std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[1]);
    watchdogMain(fds[0], cleanupDir);
  }
  ::close(fds[0]);
  pid_ = pid;
  writeFd_ = fds[1];
}

Watchdog::~Watchdog() {
  if (writeFd_ >= 0) ::close(writeFd_);
  if (pid_ <= 0 || reaped_) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() >= deadline) return;  // it ends by itself; init reaps it
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void Watchdog::send(int value) {
  if (writeFd_ < 0) return;
  int32_t v = value;
  ssize_t n;
  do {
    n = ::write(writeFd_, &v, sizeof v);
  } while (n < 0 && errno == EINTR);
}

void Watchdog::watch(pid_t processGroup) {
  send(static_cast<int>(processGroup));
}
void Watchdog::forget(pid_t processGroup) {
  send(-static_cast<int>(processGroup));
}
void Watchdog::release() {
  send(0);
}

}  // namespace xtrain::launcher
