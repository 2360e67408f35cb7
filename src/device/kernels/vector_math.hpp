// exp, expm1 and erf for FLOAT written with arithmetic, selects and bit casts only, so that loops
// calling them vectorise (libm's expf/erff are opaque calls that keep a loop scalar). Compile the
// caller with -fno-trapping-math (see src/device/CMakeLists.txt) so that the selects vectorise.
//
// Accuracy against the exact function: exp and expm1 within about 1e-7 relative, erf within
// 1.5e-7 absolute and 2e-7 relative; NaN propagates, overflow gives +inf and underflow 0.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace xtrain::device::vmath {

// e^x = 2^n e^r with n = round(x / ln 2) and |r| <= ln2 / 2; e^r by its Taylor polynomial of degree
// 7 (the remainder is below 1e-8 there); 2^n is built in the exponent bits.
inline float exp(float x) {
  const float xs = std::min(std::max(x, -87.0f), 88.0f);
  const float xc = xs == xs ? xs : 0.0f;  // NaN: computed on 0, replaced at the end
  // Rounds to the nearest integer: adding 1.5 * 2^23 leaves no fraction bits.
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  const float y = p * scale;
  const float under = x < -87.0f ? 0.0f : y;
  const float over = x > 88.0f ? HUGE_VALF : under;
  return x != x ? x : over;
}

// e^x - 1: the Taylor polynomial near 0 (where e^x - 1 would cancel), exp elsewhere.
inline float expm1(float x) {
  float p = 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  p = p * x + 1.0f;
  const float small = p * x;
  const float large = vmath::exp(x) - 1.0f;
  return std::fabs(x) < 0.34f ? small : large;
}

// erf(x) = x P(x^2) for |x| <= 1; 1 - e^(-x^2) Q(1/|x|) for 1 < |x| (|x| clamped to 4, where erf
// is 1 in FLOAT). P and Q are least-squares fits (Chebyshev nodes) of erf(x)/x and
// erfc(x) e^(x^2), made for this file.
inline float erf(float x) {
  const float a = std::fabs(x);
  const float t = a * a;
  float pa = -0.000569665572f;
  pa = pa * t + 0.00493450696f;
  pa = pa * t - 0.0267269816f;
  pa = pa * t + 0.112807885f;
  pa = pa * t - 0.376124144f;
  pa = pa * t + 1.12837911f;
  const float near = a * pa;
  const float b = std::min(std::max(a, 1.0f), 4.0f);
  const float u = 1.0f / b;
  float q = -0.0186896063f;
  q = q * u + 0.1244331f;
  q = q * u - 0.361122131f;
  q = q * u + 0.582541347f;
  q = q * u - 0.50968951f;
  q = q * u + 0.052209083f;
  q = q * u + 0.557537436f;
  q = q * u + 0.000363838219f;
  const float far = 1.0f - vmath::exp(-b * b) * q;
  const float r = a <= 1.0f ? near : far;
  const float s = a != a ? x : r;  // NaN
  return std::copysign(s, x);
}

}  // namespace xtrain::device::vmath
