#include "testing/process_testing.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

namespace xtrain::testing {

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

namespace {

// `word` as one single-quoted sh word.
std::string shellQuoted(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

CommandResult runCommand(const std::string& commandLine, const CommandOptions& options) {
  const std::string cwd = options.cwd.empty() ? std::string(XTRAIN_BIN_DIR) : options.cwd;
  const std::string cmd = "cd " + shellQuoted(cwd) + " && timeout " +
                          std::to_string(options.timeoutSeconds) + " sh -c " +
                          shellQuoted(commandLine) + " 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace xtrain::testing
