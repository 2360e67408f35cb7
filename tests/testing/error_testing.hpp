// Checking errors in tests: the message of the xtrain::error a call throws, and a containment check
// that shows the whole message when it fails.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

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

}  // namespace xtrain::testing

// EXPECT_CONTAINS(haystack, needle): haystack (evaluated once; often an errorOf(...) call) contains
// needle.
#define EXPECT_CONTAINS(haystack, needle)                                    \
  do {                                                                       \
    const std::string xt_haystack_ = (haystack);                             \
    EXPECT_NE(xt_haystack_.find(needle), std::string::npos) << xt_haystack_; \
  } while (false)
