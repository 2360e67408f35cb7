#include "test_hooks.hpp"

#include <signal.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "xtrain/error.hpp"

namespace xtrain::tools {

namespace {

std::optional<int64_t> killStep() {
  const char* text = std::getenv("XTRAIN_TEST_KILL_AT_STEP");
  if (text == nullptr || *text == '\0') return std::nullopt;
  int64_t step = -1;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, step);
  if (ec != std::errc() || ptr != end || step < 0) {
    throw error("XTRAIN_TEST_KILL_AT_STEP='{}' is not a step: expected a whole number >= 0", text);
  }
  return step;
}

}  // namespace

void killSelfIfAskedAt(int64_t step) {
  static const std::optional<int64_t> at = killStep();
  if (at && *at == step) ::raise(SIGKILL);
}

}  // namespace xtrain::tools
