// Helpers for the real-process tests of xrun: start a process with its output in pipes, wait with a
// bound, and check that processes are gone. Every wait here is bounded; a Child kills its process
// group (SIGKILL) when destroyed while still running.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace xtrain::launcher::testing {

struct ProcessResult {
  int exitCode = -1;      // exit code, or 128 + signal
  bool timedOut = false;  // the bound passed and the process was killed
  std::string out;
  std::string err;
  double seconds = 0;  // from start to exit
};

class Child {
 public:
  // Starts argv[0] (a path) with `extraEnv` ("NAME=VALUE") added to this process's environment, in
  // its own process group.
  explicit Child(const std::vector<std::string>& argv,
                 const std::vector<std::string>& extraEnv = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Reads output until `ready(stdoutSoFar)` holds; false when the bound passes or the process ends
  // first.
  bool waitForStdout(const std::function<bool(const std::string&)>& ready, double timeoutSeconds);
  // Reads until the process exits; kills its group at the bound.
  ProcessResult wait(double timeoutSeconds);

 private:
  void pump(int timeoutMs);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int outFd_ = -1;
  int errFd_ = -1;
  double startSeconds_ = 0;
  ProcessResult result_;
};

// The xrun under test (XTRAIN_BIN_DIR/xrun).
std::string xrunPath();

// Runs xrun with `args`; bounded by timeoutSeconds.
ProcessResult runXrun(const std::vector<std::string>& args, double timeoutSeconds = 30,
                      const std::vector<std::string>& extraEnv = {});

// True once `pid` no longer exists or is a zombie, polling up to timeoutSeconds.
bool processGone(pid_t pid, double timeoutSeconds);

// A fresh private directory; removeTree removes it.
std::string makeTempDir();
void removeTree(const std::string& dir);

// Reads whitespace-separated pids from every file in `dir` whose name starts with `prefix`.
std::vector<pid_t> readPids(const std::string& dir, const std::string& prefix);

// Splits text into lines (no trailing empty line).
std::vector<std::string> splitLines(const std::string& text);

double nowSeconds();

}  // namespace xtrain::launcher::testing
