#include "launcher/watchdog.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::launcher {

namespace {

enum Op : int32_t { kRelease = 0, kWatch = 1, kForget = 2, kWatchSession = 3, kForgetSession = 4 };

struct Message {
  int32_t op;
  int32_t value;
};

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

  std::vector<int32_t> groups, sessions;
  bool released = false;
  for (;;) {
    Message m{};
    ssize_t n = ::read(readFd, &m, sizeof m);  // writes of 8 bytes to a pipe are atomic
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof m)) break;  // EOF: xrun is gone
    switch (m.op) {
      case kWatch: groups.push_back(m.value); break;
      case kForget:
        groups.erase(std::remove(groups.begin(), groups.end(), m.value), groups.end());
        break;
      case kWatchSession: sessions.push_back(m.value); break;
      case kForgetSession:
        sessions.erase(std::remove(sessions.begin(), sessions.end(), m.value), sessions.end());
        break;
      default: released = true; break;
    }
  }
  if (!released) {
    for (int32_t g : groups) ::kill(-g, SIGKILL);
    // A session's processes may still fork while being killed: repeat until none is left (bounded).
    for (int32_t s : sessions) {
      for (int pass = 0; pass < 100 && signalSession(s, SIGKILL) > 0; ++pass) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
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

void Watchdog::send(int op, int value) {
  if (writeFd_ < 0) return;
  Message m{op, value};
  ssize_t n;
  do {
    n = ::write(writeFd_, &m, sizeof m);
  } while (n < 0 && errno == EINTR);
}

void Watchdog::watch(pid_t processGroup) {
  send(kWatch, static_cast<int>(processGroup));
}
void Watchdog::forget(pid_t processGroup) {
  send(kForget, static_cast<int>(processGroup));
}
void Watchdog::watchSession(pid_t session) {
  send(kWatchSession, static_cast<int>(session));
}
void Watchdog::forgetSession(pid_t session) {
  send(kForgetSession, static_cast<int>(session));
}
void Watchdog::release() {
  send(kRelease, 0);
}

std::vector<pid_t> sessionMembers(pid_t session) {
  std::vector<pid_t> out;
  if (session <= 1) return out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  const pid_t self = ::getpid();
  while (dirent* e = ::readdir(proc)) {
    const char* name = e->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    char* end = nullptr;
    long pid = std::strtol(name, &end, 10);
    if (*end != '\0' || pid == self) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) S ppid pgrp session ...": comm may hold anything, so parse after the last ')'.
    const char* paren = std::strrchr(buf, ')');
    if (paren == nullptr) continue;
    char state = 0;
    long ppid = 0, pgrp = 0, sid = 0;
    if (std::sscanf(paren + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &sid) != 4) continue;
    if (sid == session && state != 'Z' && state != 'X') out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

int signalSession(pid_t session, int sig) {
  int count = 0;
  for (pid_t p : sessionMembers(session)) {
    if (::kill(p, sig) == 0) ++count;
  }
  return count;
}

}  // namespace xtrain::launcher
