// Runs one tool as a child process with a hard time limit: its own process group (so a timeout
// kills everything it started), its own working directory, output to a log file, stdin at EOF,
// no core files and a bounded address space (a reader that loops until memory runs out must not
// take the shared machine with it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace xfuzz {

struct RunSpec {
  std::vector<std::string> argv;        // argv[0] is the program's path
  std::string workDir;                  // the child's working directory
  std::string logPath;                  // stdout and stderr go here
  std::map<std::string, std::string> env;  // set on top of the inherited environment
  std::chrono::milliseconds timeout{10000};
  long long addressSpaceMb = 4096;      // RLIMIT_AS of the child, 0 = unlimited
};

struct RunResult {
  enum class Ending { Exited, Signaled, TimedOut, Interrupted, NotStarted };
  Ending ending = Ending::NotStarted;
  int exitCode = -1;   // Exited
  int signal = 0;      // Signaled
  std::string error;   // NotStarted: why (errno text of fork or exec)
  std::chrono::milliseconds elapsed{0};

  // "exit 2", "signal 11 (SIGSEGV)", "timeout after 10 s", ...
  std::string describe() const;
};

// Blocks until the child ended or the timeout passed (then kills its process group and reaps it).
// Never leaves a zombie or a straggler of the group behind.
RunResult runProcess(const RunSpec& spec);

std::string signalName(int sig);

// Set from a SIGINT/SIGTERM handler: the running child's group is killed at once and no case
// starts after it, so an interrupted harness leaves no tool running.
void requestStop();
bool stopRequested();

}  // namespace xfuzz
