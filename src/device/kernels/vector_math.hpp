// exp, expm1, log1p, erf, tanh(softplus), sin, cos and the roundings for FLOAT written with
// arithmetic, selects and bit casts only, so that loops calling them vectorise (libm's expf/erff
// are opaque calls that keep a loop scalar). Compile the caller with -fno-trapping-math (see
// src/device/CMakeLists.txt) so that the selects vectorise.
//
// Accuracy against the exact function: exp, expm1 and log1p within about 2e-7 relative, softplus
// 5e-7, erf within 1.5e-7 absolute and 2e-7 relative; the roundings are exact. NaN propagates,
// overflow gives +inf and underflow 0.
//
// The building blocks (horner, pow2i, expInRange) take a float or a V4 (four floats, GCC's vector
// extensions), so the recurrent kernels' vector code (rnn_common.hpp) shares them. They are
// always_inline: written out by hand in each function before, and the callers' loops must inline
// and vectorise exactly as they did.
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace xtrain::device::vmath {

// p(x) = c0 x^(k-1) + c1 x^(k-2) + ... + c(k-1) by Horner's rule: the coefficients are a table,
// the evaluation unrolled at compile time (p * x - c is p * x + (-c) to the bit).
template <typename T, typename... C>
[[gnu::always_inline]] inline T horner([[maybe_unused]] T x, float c0, C... cs) {
  T p = T{} + c0;
  ((p = p * x + cs), ...);
  return p;
}

// Four floats at a time (SSE2, the baseline x86-64 vector width; wider vectors would change the
// calling convention without AVX), for loops written with the compiler's vector extensions.
using V4 = float __attribute__((vector_size(16)));
using V4i = int32_t __attribute__((vector_size(16)));

// 2^n for an integral n in [-126, 127], built in the exponent bits.
[[gnu::always_inline]] inline float pow2i(float n) {
  return std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}
[[gnu::always_inline]] inline V4 pow2i(V4 n) {
  return std::bit_cast<V4>((__builtin_convertvector(n, V4i) + 127) << 23);
}

// e^x for x in [-87, 88] (not NaN), for a float or a V4: e^x = 2^n e^r with n = round(x / ln 2)
// and |r| <= ln2 / 2 (ln 2 in two parts); e^r by its Taylor polynomial of degree 7 (the remainder
// is below 1e-8 there).
template <typename T>
[[gnu::always_inline]] inline T expInRange(T x) {
  // Rounds to the nearest integer: adding 1.5 * 2^23 leaves no fraction bits.
  const T n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const T r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  const T p = horner(r, 1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f,
                     0.5f, 1.0f, 1.0f);
  return p * pow2i(n);
}

// e^x: expInRange on x clamped to [-87, 88], with underflow to 0, overflow to +inf and NaN.
inline float exp(float x) {
  const float xs = std::min(std::max(x, -87.0f), 88.0f);
  const float xc = xs == xs ? xs : 0.0f;  // NaN: computed on 0, replaced at the end
  const float y = vmath::expInRange(xc);
  const float under = x < -87.0f ? 0.0f : y;
  const float over = x > 88.0f ? HUGE_VALF : under;
  return x != x ? x : over;
}

// e^x - 1: the Taylor polynomial near 0 (where e^x - 1 would cancel), exp elsewhere.
inline float expm1(float x) {
  const float p = horner(x, 1.0f / 40320.0f, 1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f,
                         1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f);
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
  const float pa = horner(t, -0.000569665572f, 0.00493450696f, -0.0267269816f, 0.112807885f,
                          -0.376124144f, 1.12837911f);
  const float near = a * pa;
  const float b = std::min(std::max(a, 1.0f), 4.0f);
  const float u = 1.0f / b;
  const float q = horner(u, -0.0186896063f, 0.1244331f, -0.361122131f, 0.582541347f, -0.50968951f,
                         0.052209083f, 0.557537436f, 0.000363838219f);
  const float far = 1.0f - vmath::exp(-b * b) * q;
  const float r = a <= 1.0f ? near : far;
  const float s = a != a ? x : r;  // NaN
  return std::copysign(s, x);
}

// log(1 + z) for z >= -1. u = 1 + z = m 2^k with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s),
// s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^11. The rounding error of 1 + z is
// corrected with the factor z / (u - 1) (exact for u != 1; z itself where u == 1).
inline float log1p(float z) {
  const float u = 1.0f + z;
  const float uc = u > 0.0f && u < HUGE_VALF ? u : 1.0f;  // other values are replaced at the end
  const int32_t bits = std::bit_cast<int32_t>(uc);
  // The exponent of uc relative to sqrt(1/2): m = uc / 2^k lands in [sqrt(1/2), sqrt(2)).
  const int32_t k = ((bits - 0x3f3504f3) >> 23);
  const float m = std::bit_cast<float>(bits - static_cast<int32_t>(static_cast<uint32_t>(k) << 23));
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float p =
      horner(s2, 1.0f / 11.0f, 1.0f / 9.0f, 1.0f / 7.0f, 1.0f / 5.0f, 1.0f / 3.0f, 1.0f);
  const float logU = static_cast<float>(k) * 0.693147180559945309f + 2.0f * s * p;
  const float d = u - 1.0f;
  const float corrected = d == 0.0f ? z : logU * (z / d);
  const float neg = u == 0.0f ? -HUGE_VALF : corrected;
  const float bad = u < 0.0f || z != z ? std::numeric_limits<float>::quiet_NaN() : neg;
  return u == HUGE_VALF ? HUGE_VALF : bad;
}

// log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
inline float softplus(float x) {
  return std::max(x, 0.0f) + vmath::log1p(vmath::exp(-std::fabs(x)));
}

// tanh(softplus(x)) = n / (n + 2) with n = e^x (e^x + 2); 1 from x = 20 on (FLOAT's 1 - 2^-24
// is reached long before).
inline float tanhSoftplus(float x) {
  const float e = vmath::exp(std::min(x, 20.0f));
  const float n = e * (e + 2.0f);
  return n / (n + 2.0f);
}

// Round half to even (the default rounding mode's nearbyint): adding and subtracting 2^23 leaves
// no fraction bits; values of magnitude 2^23 and more are integers already.
inline float nearbyint(float x) {
  const float a = std::fabs(x);
  const float r = (a + 8388608.0f) - 8388608.0f;
  const float v = a < 8388608.0f ? r : a;  // also keeps inf and NaN
  return std::copysign(v, x);
}

inline float floor(float x) {
  const float r = vmath::nearbyint(x);
  return std::copysign(r > x ? r - 1.0f : r, x);  // the sign of a zero result follows x
}

inline float ceil(float x) {
  const float r = vmath::nearbyint(x);
  return std::copysign(r < x ? r + 1.0f : r, x);  // ceil(-0.5) is -0
}

// sin and cos for |x| <= kTrigMax (other arguments, inf and NaN give 0; callers send them to
// libm). x = k pi/2 + r, |r| <= pi/4, with pi/2 split into three 12-bit parts and a remainder
// (Cody and Waite), so that k times each part is exact for |k| < 2^12; then the Taylor polynomials
// of sin and cos to degree 9 and 10, chosen by the quadrant k mod 4. Within 2e-7 absolute.
inline constexpr float kTrigMax = 6000.0f;

struct TrigReduced {
  float s;    // sin(r)
  float c;    // cos(r)
  int32_t q;  // the quadrant, k mod 4
};

inline TrigReduced trigReduce(float x) {
  const float xc = std::fabs(x) <= kTrigMax ? x : 0.0f;
  const float k = (xc * 0.636619772367581343f + 12582912.0f) - 12582912.0f;
  const float r =
      (((xc - k * 1.57080078125f) - k * -4.453584551811218e-06f) - k * -8.706138032721356e-10f) -
      k * 6.223371969669989e-14f;
  const float r2 = r * r;
  const float ps = horner(r2, 1.0f / 362880.0f, -1.0f / 5040.0f, 1.0f / 120.0f, -1.0f / 6.0f);
  const float pc =
      horner(r2, -1.0f / 3628800.0f, 1.0f / 40320.0f, -1.0f / 720.0f, 1.0f / 24.0f, -0.5f);
  return {r + r * r2 * ps, 1.0f + r2 * pc, static_cast<int32_t>(k) & 3};
}

// sin(r + q pi/2) = s, c, -s, -c for q = 0..3; sin(+-0) keeps its sign.
inline float sinBounded(float x) {
  const TrigReduced t = trigReduce(x);
  const float v = (t.q & 1) != 0 ? t.c : t.s;
  const float y = (t.q & 2) != 0 ? -v : v;
  return x == 0.0f ? x : y;
}

// cos(r + q pi/2) = c, -s, -c, s for q = 0..3.
inline float cosBounded(float x) {
  const TrigReduced t = trigReduce(x);
  const float v = (t.q & 1) != 0 ? t.s : t.c;
  return ((t.q + 1) & 2) != 0 ? -v : v;
}

}  // namespace xtrain::device::vmath

#pragma GCC visibility pop
