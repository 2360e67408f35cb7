#include "test_hooks.hpp"

#include <signal.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "xtrain/error.hpp"

namespace xtrain::tools {

namespace {

std::optional<int64_t> stepOf(const char* variable) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return std::nullopt;
  int64_t step = -1;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, step);
  if (ec != std::errc() || ptr != end || step < 0) {
    throw error("{}='{}' is not a whole number >= 0", variable, text);
  }
  return step;
}

}  // namespace

void killSelfIfAskedAt(int64_t step) {
  static const std::optional<int64_t> killAt = stepOf("XTRAIN_TEST_KILL_AT_STEP");
  static const std::optional<int64_t> stopAt = stepOf("XTRAIN_TEST_STOP_AT_STEP");
  static const std::optional<int64_t> delayMs = stepOf("XTRAIN_TEST_STEP_DELAY_MS");
  if (delayMs) std::this_thread::sleep_for(std::chrono::milliseconds(*delayMs));
  if (killAt && *killAt == step) ::raise(SIGKILL);
  if (stopAt && *stopAt == step) ::raise(SIGSTOP);
}

}  // namespace xtrain::tools
