// Helpers for tests that touch the process environment or run programs: an environment variable set
// for a scope, and a shell command run with its output captured and its time bounded.
#pragma once

#include <optional>
#include <string>

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

}  // namespace xtrain::testing
