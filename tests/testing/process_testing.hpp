// Helpers for tests that touch the process environment or run programs: an environment variable set
// for a scope, a shell command run with its output captured and its time bounded, and a program
// started in its own process group with its output in pipes (Child).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace xtrain::testing {

// Sets (or, given nullptr, unsets) an environment variable for its lifetime; the old value (or its
// absence) comes back on destruction.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

struct CommandResult {
  int exitCode = -1;   // exit code, or 128 + signal
  std::string output;  // stdout and stderr
};

struct CommandOptions {
  std::string cwd;           // working directory; empty: the build's bin directory
  int timeoutSeconds = 300;  // the command (sh -c) is ended by timeout(1) after this
};

// Runs `commandLine` through sh -c, stdout and stderr captured together.
CommandResult runCommand(const std::string& commandLine, const CommandOptions& options = {});

struct ProcessResult {
  int exitCode = -1;      // exit code, or 128 + signal
  bool timedOut = false;  // the bound passed and the process was killed
  std::string out;
  std::string err;
  double seconds = 0;  // from start to exit
};

// A program started with its stdout and stderr in pipes, in its own process group. Every wait is
// bounded; a Child kills its process group (SIGKILL) when destroyed while still running.
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
  // The same on stderr.
  bool waitForStderr(const std::function<bool(const std::string&)>& ready, double timeoutSeconds);
  // Reads until the process exits; kills its group at the bound.
  ProcessResult wait(double timeoutSeconds);

 private:
  void pump(int timeoutMs);
  bool waitForOutput(const std::string& output,
                     const std::function<bool(const std::string&)>& ready, double timeoutSeconds);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int outFd_ = -1;
  int errFd_ = -1;
  double startSeconds_ = 0;
  ProcessResult result_;
};

// Seconds on the steady clock.
double nowSeconds();

}  // namespace xtrain::testing
