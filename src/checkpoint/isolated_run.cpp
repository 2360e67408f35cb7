#include "checkpoint/isolated_run.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/env_value.hpp"

namespace xtrain::checkpoint {

namespace {

std::string describeStatus(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exit code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

IsolatedOutcome runIsolated(const std::function<void()>& work, std::chrono::milliseconds limit) {
  IsolatedOutcome outcome;
  const pid_t child = ::fork();
  if (child < 0) {
    outcome.failure =
        std::string("no process could be started to read it safely: ") + std::strerror(errno);
    return outcome;
  }
  if (child == 0) {
    // A second bound in case the parent cannot kill it (it was killed itself).
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(limit).count();
    ::alarm(static_cast<unsigned>(seconds + 2));
    try {
      work();
    } catch (...) {
    }
    ::_exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (auto pause = std::chrono::microseconds(200);;
       pause = std::min(pause * 2, decltype(pause)(20000))) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      outcome.failure =
          std::string("waiting for the reading process failed: ") + std::strerror(errno);
      return outcome;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      const auto ms = limit.count();
      outcome.failure = "it did not finish within " + std::to_string(ms) + " ms (an endless loop)";
      return outcome;
    }
    std::this_thread::sleep_for(pause);
  }
  outcome.completed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!outcome.completed) outcome.failure = "it ended with " + describeStatus(status);
  return outcome;
}

std::chrono::milliseconds unsealedIndexTimeLimit() {
  // A bad value used to be taken silently as the default; it is refused like any other.
  return readEnvDuration("XTRAIN_UNSEALED_INDEX_TIMEOUT").value_or(std::chrono::seconds(5));
}

}  // namespace xtrain::checkpoint
