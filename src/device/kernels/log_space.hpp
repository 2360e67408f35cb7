// Arithmetic on log-probabilities, for the kernels that sum probabilities too small for a float
// (CTC loss's alpha-beta recursion, CTC beam search).
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <cmath>
#include <limits>

namespace xtrain::device {

inline constexpr double kLogZero = -std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) without overflow; kLogZero is the log of 0.
inline double logAdd(double a, double b) {
  if (a == kLogZero) return b;
  if (b == kLogZero) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

}  // namespace xtrain::device

#pragma GCC visibility pop
