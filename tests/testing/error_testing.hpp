// Checking errors in tests: the message of the xtrain::error a call throws, a containment check
// that shows the whole message when it fails, and expectError (one call: it throws, and the message
// names every part).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::testing {

// The message of the xtrain::error `fn` throws; a test failure (and "") when it throws none.
inline std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an xtrain::error";
  return {};
}

// Runs fn and expects it to throw an xtrain::error (a user-facing one: an internal_error is a
// failure) whose message contains every part. XTRAIN_PRINT_ERRORS=1 prints each message, to
// review their wording.
template <typename F>
void expectError(F&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an xtrain::error"
                  << (parts.empty() ? std::string() : " mentioning '" + parts.front() + "'");
  } catch (const internal_error& e) {
    ADD_FAILURE() << "internal_error instead of error: " << e.what();
  } catch (const error& e) {
    const std::string what = e.what();
    if (std::getenv("XTRAIN_PRINT_ERRORS")) std::cerr << "  [error] " << what << "\n";
    for (const auto& p : parts) {
      EXPECT_NE(what.find(p), std::string::npos) << "message lacks '" << p << "':\n" << what;
    }
  }
}

}  // namespace xtrain::testing

// EXPECT_CONTAINS(haystack, needle): haystack (evaluated once; often an errorOf(...) call) contains
// needle.
#define EXPECT_CONTAINS(haystack, needle)                                    \
  do {                                                                       \
    const std::string xt_haystack_ = (haystack);                             \
    EXPECT_NE(xt_haystack_.find(needle), std::string::npos) << xt_haystack_; \
  } while (false)
