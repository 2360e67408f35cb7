#include "launcher/job_signals.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "xtrain/error.hpp"

namespace xtrain::launcher {
namespace {

int gSignalPipe[2] = {-1, -1};

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

SignalScope::SignalScope() {
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

SignalScope::~SignalScope() {
  for (size_t i = 0; i < std::size(kHandledSignals); ++i)
    ::sigaction(kHandledSignals[i], &old_[i], nullptr);
  ::sigaction(SIGPIPE, &oldPipe_, nullptr);
  ::close(gSignalPipe[0]);
  ::close(gSignalPipe[1]);
  gSignalPipe[0] = gSignalPipe[1] = -1;
}

int SignalScope::readFd() const {
  return gSignalPipe[0];
}

int signalPipeReadFd() {
  return gSignalPipe[0];
}

int endSignalReceived() {
  return gEndSignal;
}

BlockSignals::BlockSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kHandledSignals) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, &old_);
}

BlockSignals::~BlockSignals() {
  ::sigprocmask(SIG_SETMASK, &old_, nullptr);
}

void defaultSignalsInChild() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : kHandledSignals) ::sigaction(sig, &dfl, nullptr);
  ::sigaction(SIGPIPE, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

int SignalHandlers::waitForSignal(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, seconds)));
  for (;;) {
    unsigned char sig = 0;
    while (::read(scope_.readFd(), &sig, 1) == 1) {
      // SIGQUIT asks for a hang report, which has nothing to report between attempts.
      if (sig != SIGCHLD && sig != SIGQUIT) return sig;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return 0;
    pollfd p{scope_.readFd(), POLLIN, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    ::poll(&p, 1, static_cast<int>(std::min<long>(ms + 1, 1000)));
  }
}

}  // namespace xtrain::launcher
