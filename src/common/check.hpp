// Checks for programmer errors (broken invariants inside xtrain). They throw xtrain::internal_error with the
// file, line, the failed condition and, for the comparison forms, both values. Bad user input is reported with
// xtrain::error (or a subclass) instead, never with these.
#pragma once
#pragma GCC visibility push(default)

#include "xtrain/error.hpp"

#define XT_CHECK(cond, ...)                                                                    \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      throw ::xtrain::internal_error(::xtrain::format("{}:{}: check failed: {}. ", __FILE__,   \
                                                      __LINE__, #cond) +                       \
                                     ::xtrain::format(__VA_ARGS__));                           \
    }                                                                                          \
  } while (false)

#define XT_CHECK_OP_(a, b, op, ...)                                                            \
  do {                                                                                         \
    const auto& xt_a_ = (a);                                                                   \
    const auto& xt_b_ = (b);                                                                   \
    if (!(xt_a_ op xt_b_)) {                                                                   \
      throw ::xtrain::internal_error(                                                          \
          ::xtrain::format("{}:{}: check failed: {} " #op " {} ({} vs {}). ", __FILE__, __LINE__, \
                           #a, #b, xt_a_, xt_b_) +                                             \
          ::xtrain::format(__VA_ARGS__));                                                      \
    }                                                                                          \
  } while (false)

#define XT_CHECK_EQ(a, b, ...) XT_CHECK_OP_(a, b, ==, __VA_ARGS__)
#define XT_CHECK_NE(a, b, ...) XT_CHECK_OP_(a, b, !=, __VA_ARGS__)
#define XT_CHECK_LT(a, b, ...) XT_CHECK_OP_(a, b, <, __VA_ARGS__)
#define XT_CHECK_LE(a, b, ...) XT_CHECK_OP_(a, b, <=, __VA_ARGS__)
#define XT_CHECK_GT(a, b, ...) XT_CHECK_OP_(a, b, >, __VA_ARGS__)
#define XT_CHECK_GE(a, b, ...) XT_CHECK_OP_(a, b, >=, __VA_ARGS__)

#pragma GCC visibility pop
