// xrun's signal handling: the handlers that turn a signal into a byte on a pipe (the self-pipe the
// supervisor polls beside the instances' output), for the duration of a job or of every attempt of
// a job with restarts.
//
// Contract:
//  - The handled signals are SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and SIGQUIT;
//    SIGPIPE is ignored while handlers are installed (a reader that went away is a failed write,
//    not death).
//  - The handler writes the signal number into the pipe and, for the first of SIGINT, SIGTERM,
//    SIGHUP, SIGUSR1, SIGUSR2, records it itself (endSignalReceived), so that no decision to start
//    instances made after the signal came can miss it.
//  - One set of handlers per process at a time; not thread-safe (process-wide state).
#pragma once

#include <signal.h>

#include <cstddef>
#include <iterator>

namespace xtrain::launcher {

inline constexpr int kHandledSignals[] = {SIGCHLD, SIGINT,  SIGTERM, SIGHUP,
                                          SIGUSR1, SIGUSR2, SIGQUIT};

// Installs the handlers and creates the pipe; restores the old handlers and closes the pipe on
// destruction. Throws xtrain::runtime_error when the pipe cannot be created.
class SignalScope {
 public:
  SignalScope();
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int readFd() const;

 private:
  struct sigaction old_[std::size(kHandledSignals)]{};
  struct sigaction oldPipe_ {};
};

// The read end of the installed scope's pipe (non-blocking; one byte per signal), -1 when no
// SignalScope lives.
int signalPipeReadFd();

// The first SIGINT, SIGTERM, SIGHUP, SIGUSR1 or SIGUSR2 received since the live SignalScope was
// installed, else 0.
int endSignalReceived();

// Blocks the handled signals for its lifetime (while forking, so that a handler never runs in a
// child before exec, and so that a signal read before starting instances cannot be followed by one
// the start misses).
class BlockSignals {
 public:
  BlockSignals();
  ~BlockSignals();
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;

 private:
  sigset_t old_;
};

// xrun's handlers for SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 (and SIGCHLD), held across the
// attempts of a job with restarts, so a signal that arrives between two attempts is not lost (nor
// kills xrun): runJob uses these while they live, and waitForStop sees what came in between.
class SignalHandlers {
 public:
  SignalHandlers() = default;
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

  // Waits up to `seconds` (0: only looks) for SIGINT, SIGTERM, SIGHUP, SIGUSR1 or SIGUSR2 and
  // returns the first, or 0 when none came. One signal per call: call again for the next.
  int waitForSignal(double seconds);

  // The first SIGINT, SIGTERM, SIGHUP, SIGUSR1 or SIGUSR2 received since the handlers were
  // installed, at any time (during an attempt too, where runJob consumes it), else 0. Set by the
  // signal handler itself, so a decision to start another attempt that reads it cannot miss a
  // signal that came before; runJob reads it again with the signals blocked just before it starts
  // the instances, and starts none when it is set (JobEnd::NotStarted).
  int endRequested() const { return endSignalReceived(); }

 private:
  SignalScope scope_;
};

// In a child between fork and exec (async-signal-safe): the handled signals and SIGPIPE back to
// their defaults, and none blocked.
void defaultSignalsInChild() noexcept;

}  // namespace xtrain::launcher
