#include "test_hooks.hpp"

#include <signal.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain::tools {

namespace {

std::optional<int64_t> stepOf(const char* variable) {
  return readEnvWholeNumber(variable, 0, INT64_MAX);
}

}  // namespace

void killSelfIfAskedAt(int64_t step) {
  static const std::optional<int64_t> killAt = stepOf("XTRAIN_TEST_KILL_AT_STEP");
  static const std::optional<int64_t> stopAt = stepOf("XTRAIN_TEST_STOP_AT_STEP");
  // Milliseconds, at most kMaxDuration: sleep_for adds it to now() in nanoseconds.
  static const std::optional<int64_t> delayMs = readEnvWholeNumber(
      "XTRAIN_TEST_STEP_DELAY_MS", 0,
      std::chrono::duration_cast<std::chrono::milliseconds>(kMaxDuration).count());
  if (delayMs) std::this_thread::sleep_for(std::chrono::milliseconds(*delayMs));
  if (killAt && *killAt == step) ::raise(SIGKILL);
  if (stopAt && *stopAt == step) ::raise(SIGSTOP);
}

}  // namespace xtrain::tools
