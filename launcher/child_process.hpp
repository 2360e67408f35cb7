// Starting one process of a job: fork and exec with its output in pipes, in a process group (or a
// session) of its own, so that the supervisor can signal everything it starts at once.
//
// Contract:
//  - The child gets stdin from `devNull`, stdout and stderr into two pipes whose read ends the
//    parent keeps (close-on-exec), PR_SET_PDEATHSIG(SIGKILL), the default signal handlers and no
//    signal blocked (launcher/job_signals.hpp), and is its own process group (pgid = pid; set in
//    the parent too, so that signalling the group works at once), or with `ownSession` its own
//    session (setsid: the engines, which put what they start in groups of their own).
//  - forkChild returns as soon as the child exists; awaitExec then says whether its exec worked,
//    so that the caller can register the child (the watchdog) before it runs the program.
//  - Call it with the handled signals blocked (BlockSignals), and while xrun has one thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace xtrain::launcher {

// argv and envp as execve takes them, made before fork: the child only touches these raw arrays.
// They point into the strings they were made from, which must outlive them.
struct ExecArrays {
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecArrays makeExecArrays(const std::vector<std::string>& argv,
                          const std::vector<std::string>& envp);

struct ForkedChild {
  pid_t pid = -1;
  int stdoutFd = -1;  // read ends
  int stderrFd = -1;
  int execStatusFd = -1;  // for awaitExec
};

// Forks the child that execs `executable`. Throws xtrain::runtime_error ("cannot create pipes for
// instance <index>", "cannot fork instance <index>") when the child cannot be made.
ForkedChild forkChild(const std::string& executable, const ExecArrays& exec, int devNull,
                      bool ownSession, int index);

// Waits until the child has exec'd (or failed to) and closes child.execStatusFd: 0 when the
// program runs, else the errno of the failed execve (the child then exits 127).
int awaitExec(ForkedChild& child);

}  // namespace xtrain::launcher
