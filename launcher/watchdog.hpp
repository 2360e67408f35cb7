// The watchdog: a small process that outlives xrun only to clean up after it.
//
// xrun tells it, through a pipe, each instance's process group as it starts (watch) and each group
// that has ended (forget); for the mpirun and srun engines, the engine's session (watchSession),
// since mpirun puts each process it starts in a process group of its own, but in its session. When
// the pipe reaches end of file — xrun exited or was killed — without release() having been said,
// the watchdog sends SIGKILL to every group still on its list and to every process of every session
// on its list, and removes the cleanup directory. It runs in its own process group and ignores
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2, so a signal meant for xrun's group does not take it
// away before xrun is done. Fork it while xrun has one thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace xtrain::launcher {

class Watchdog {
 public:
  explicit Watchdog(const std::string& cleanupDir);
  // Closes the pipe and waits (at most 2 s) for the watchdog to exit.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void watch(pid_t processGroup);
  void forget(pid_t processGroup);
  void watchSession(pid_t session);
  void forgetSession(pid_t session);
  // The job ended cleanly: the watchdog exits without killing or removing anything.
  void release();

  pid_t pid() const { return pid_; }
  // Whoever reaps child processes wholesale (waitpid(-1)) and gets the watchdog's says so here.
  void markReaped() { reaped_ = true; }

 private:
  void send(int op, int value);

  pid_t pid_ = -1;
  int writeFd_ = -1;
  bool reaped_ = false;
};

// The live processes (zombies excluded) of session `session`, from /proc.
std::vector<pid_t> sessionMembers(pid_t session);

// Sends `sig` to every live process of `session` (none when session <= 1); returns how many.
int signalSession(pid_t session, int sig);

}  // namespace xtrain::launcher
