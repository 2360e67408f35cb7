// Elementwise ops of src/ir/ops/elementwise_ops.cpp and the integer forms of Add/Sub/Mul/Div:
// forward against double-precision references written here, gradients against finite
// differences, the opset forms (Clip, Max/Min, Mod) and the error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "device/kernels/vector_math.hpp"
#include "ir/autodiff/autodiff.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

using Ref1 = std::function<double(double)>;

HostTensor boolTensor(const Shape& shape, const std::vector<int>& values) {
  HostTensor t(TensorInfo(DataType::BOOL, shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.nelms());
  auto* p = reinterpret_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i] != 0 ? 1 : 0;
  return t;
}

std::vector<int> boolValues(const HostTensor& t) {
  EXPECT_EQ(t.dataType(), DataType::BOOL);
  const auto* p = reinterpret_cast<const uint8_t*>(t.raw());
  return std::vector<int>(p, p + t.nelms());
}

// The row-major multi-index of flat output index `o` in `out`, mapped to the flat index of an
// input of shape `in` broadcast to `out` (numpy rules). Test-only: the slow obvious way.
int64_t broadcastIndex(int64_t o, const Shape& out, const Shape& in) {
  int64_t idx = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t coord = o % out[d];
    o /= out[d];
    if (k < in.size()) {
      const size_t di = in.size() - 1 - k;
      if (in[di] != 1) idx += coord * stride;
      stride *= in[di];
    }
  }
  return idx;
}

BuildFn op(const std::string& type, Attributes a = {}, int opset = 13) {
  return [type, a, opset](ir::Graph& g, auto in) {
    return addOp(g, type, in, a, 1, ir::kOnnxDomain, opset);
  };
}

// ---- Unary float ops

struct UnaryCase {
  std::string name;  // test name
  std::string type;
  Attributes attrs;
  Ref1 ref;
  float lo, hi;  // input range for the forward check and the gradient check
};

std::ostream& operator<<(std::ostream& os, const UnaryCase& c) {
  return os << c.name;
}

double softplusRef(double x) {
  return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0);
}

std::vector<UnaryCase> unaryCases() {
  const double seluA = 1.67326319217681884765625, seluG = 1.05070102214813232421875;
  return {
      {"Erf", "Erf", {}, [](double x) { return std::erf(x); }, -2.5f, 2.5f},
      {"Sin", "Sin", {}, [](double x) { return std::sin(x); }, -4, 4},
      {"Cos", "Cos", {}, [](double x) { return std::cos(x); }, -4, 4},
      {"Reciprocal", "Reciprocal", {}, [](double x) { return 1.0 / x; }, 0.5f, 2},
      {"Softplus", "Softplus", {}, softplusRef, -6, 6},
      {"Softsign", "Softsign", {}, [](double x) { return x / (1 + std::abs(x)); }, -3, 3},
      {"Mish", "Mish", {}, [](double x) { return x * std::tanh(softplusRef(x)); }, -4, 4},
      {"HardSwish",
       "HardSwish",
       {},
       [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); },
       -2.9f,
       2.9f},
      {"LeakyReluDefault", "LeakyRelu", {}, [](double x) { return x < 0 ? 0.01 * x : x; }, -2, 2},
      {"LeakyRelu", "LeakyRelu", attrs({{"alpha", 0.3f}}),
       [](double x) { return x < 0 ? 0.3 * x : x; }, -2, 2},
      {"EluDefault", "Elu", {}, [](double x) { return x > 0 ? x : std::expm1(x); }, -3, 2},
      {"Elu", "Elu", attrs({{"alpha", 0.5f}}),
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, -3, 2},
      {"Selu",
       "Selu",
       {},
       [=](double x) { return seluG * (x > 0 ? x : seluA * (std::exp(x) - 1)); },
       -3,
       2},
      {"SeluCustom", "Selu", attrs({{"alpha", 2.0f}, {"gamma", 3.0f}}),
       [](double x) { return 3.0 * (x > 0 ? x : 2.0 * (std::exp(x) - 1)); }, -3, 2},
      {"CeluDefault",
       "Celu",
       {},
       [](double x) { return std::max(0.0, x) + std::min(0.0, std::exp(x) - 1); },
       -3,
       2},
      {"Celu", "Celu", attrs({{"alpha", 2.0f}}),
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * (std::exp(x / 2) - 1)); }, -3,
       2},
      // Kinks at -2.5 and 2.5 (default) stay outside the range.
      {"HardSigmoidDefault",
       "HardSigmoid",
       {},
       [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); },
       -2.4f,
       2.4f},
      {"HardSigmoid", "HardSigmoid", attrs({{"alpha", 0.5f}, {"beta", 0.25f}}),
       [](double x) { return std::clamp(0.5 * x + 0.25, 0.0, 1.0); }, -0.45f, 1.45f},
  };
}

class ElementwiseUnary : public ::testing::TestWithParam<UnaryCase> {};

HostTensor applyRef(const HostTensor& x, const Ref1& f) {
  HostTensor y(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) y.setFromDouble(i, f(x.getAsDouble(i)));
  return y;
}

TEST_P(ElementwiseUnary, MatchesReference) {
  const auto& c = GetParam();
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{}, Shape{0, 3}, Shape{1, 1000}}) {
    const HostTensor x = randomTensor(shape, 11, c.lo, c.hi);
    auto out = runForward(op(c.type, c.attrs), {x});
    EXPECT_TRUE(allClose(out[0], applyRef(x, c.ref), 1e-5, 1e-6))
        << c.type << " on " << shapeToString(shape);
  }
}

TEST_P(ElementwiseUnary, GradientMatchesFiniteDifferences) {
  const auto& c = GetParam();
  expectGradientsMatch(op(c.type, c.attrs), {randomTensor({3, 5}, 21, c.lo, c.hi)});
}

INSTANTIATE_TEST_SUITE_P(Ops, ElementwiseUnary, ::testing::ValuesIn(unaryCases()),
                         [](const auto& info) { return info.param.name; });

TEST(ElementwiseOps, ActivationsOutsideTheirMiddleRange) {
  auto x = HostTensor::fromVector<float>({6}, {-100, -5, -3.5, 3.5, 5, 100});
  auto hs = runForward(op("HardSwish"), {x});
  EXPECT_TRUE(allClose(hs[0], HostTensor::fromVector<float>({6}, {0, 0, 0, 3.5, 5, 100})));
  auto sp = runForward(op("Softplus"), {x});
  EXPECT_TRUE(allClose(sp[0], applyRef(x, softplusRef), 1e-6, 1e-30));
  auto hsig = runForward(op("HardSigmoid"), {x});
  EXPECT_TRUE(allClose(hsig[0], HostTensor::fromVector<float>({6}, {0, 0, 0, 1, 1, 1})));
  auto mish = runForward(op("Mish"), {x});
  EXPECT_TRUE(allClose(mish[0], applyRef(x, [](double v) { return v * std::tanh(softplusRef(v)); }),
                       1e-5, 1e-6));
  // Gradients in the flat parts: HardSwish 0 / 1, HardSigmoid 0.
  auto far = HostTensor::fromVector<float>({4}, {-5, -4, 4, 5});
  expectGradientsMatch(op("HardSwish"), {far});
  expectGradientsMatch(op("HardSigmoid"), {far});
  expectGradientsMatch(op("Softplus"), {HostTensor::fromVector<float>({4}, {-30, -10, 10, 30})});
}

TEST(ElementwiseOps, ThresholdedRelu) {
  // Forward against the naive reference, default alpha (1) and a negative one.
  const HostTensor x = randomTensor({4, 5}, 5, -3.0f, 3.0f);
  for (float alpha : {1.0f, -0.5f}) {
    const auto ref = [alpha](double v) { return v > alpha ? v : 0.0; };
    auto out = alpha == 1.0f ? runForward(op("ThresholdedRelu"), {x})
                             : runForward(op("ThresholdedRelu", attrs({{"alpha", alpha}})), {x});
    EXPECT_TRUE(allClose(out[0], applyRef(x, ref), 0, 0)) << "alpha " << alpha;
  }
  // At alpha itself the output is 0 (strictly greater passes).
  auto at = runForward(op("ThresholdedRelu"), {HostTensor::fromVector<float>({2}, {1.0f, 1.5f})});
  EXPECT_TRUE(allClose(at[0], HostTensor::fromVector<float>({2}, {0.0f, 1.5f}), 0, 0));
  // Gradients by finite differences, away from the step at alpha.
  const auto away = HostTensor::fromVector<float>({6}, {-2.0f, -0.3f, 0.4f, 0.8f, 1.3f, 2.5f});
  expectGradientsMatch(op("ThresholdedRelu"), {away});
  expectGradientsMatch(op("ThresholdedRelu", attrs({{"alpha", 0.0f}})), {away});
}

TEST(ElementwiseOps, CeluRejectsZeroAlpha) {
  expectError(
      [] {
        runForward(op("Celu", attrs({{"alpha", 0.0f}})), {randomTensor({2}, 1)});
      },
      {"Celu", "alpha", "nonzero"});
}

TEST(ElementwiseOps, AttributesOfTheWrongTypeNameTheOp) {
  const std::string s = "x";
  expectError(
      [&] {
        runForward(op("LeakyRelu", attrs({{"alpha", s}})), {randomTensor({2}, 1)});
      },
      {"LeakyRelu", "alpha"});
  expectError(
      [&] {
        runForward(op("Mod", attrs({{"fmod", 1.5f}})), {HostTensor::fromVector<int64_t>({1}, {1}),
                                                        HostTensor::fromVector<int64_t>({1}, {1})});
      },
      {"Mod", "fmod"});
  // An integer alpha is taken as a float (old exporters).
  auto y = runForward(op("LeakyRelu", attrs({{"alpha", int64_t{2}}})),
                      {HostTensor::fromVector<float>({2}, {-1, 1})});
  EXPECT_EQ(y[0].toVector<float>(), (std::vector<float>{-2, 1}));
}

TEST(ElementwiseOps, FloatOpsRejectIntegers) {
  expectError(
      [] {
        runForward(op("Erf"), {HostTensor::fromVector<int64_t>({2}, {1, 2})});
      },
      {"Erf", "INT64", "floating-point"});
}

TEST(ElementwiseOps, Float16RunsPromoted) {
  const HostTensor x = randomTensor({2, 5}, 3, -2, 2);
  const HostTensor xh = x.castTo(DataType::FLOAT16);
  auto out = runForward(op("Erf"), {xh});
  EXPECT_TRUE(allClose(out[0].castTo(DataType::FLOAT),
                       applyRef(xh.castTo(DataType::FLOAT), [](double v) { return std::erf(v); }),
                       2e-3, 2e-3));
  auto less = runForward(op("Less"), {xh, HostTensor::scalar(0.0f).castTo(DataType::FLOAT16)});
  const auto got = boolValues(less[0]);
  for (int64_t i = 0; i < x.nelms(); ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)], xh.getAsDouble(i) < 0 ? 1 : 0) << i;
  }
}

// The vectorisable exp, expm1 and erf the kernels use, densely against libm in double.
TEST(VectorMath, ExpExpm1ErfMatchLibm) {
  double worstExp = 0, worstExpm1 = 0, worstErfAbs = 0, worstErfRel = 0;
  for (int i = -2000000; i <= 2000000; ++i) {
    const float x = static_cast<float>(i) * 4.4e-5f;  // [-88, 88]
    const double e = std::exp(static_cast<double>(x));
    if (x > -87.0f) worstExp = std::max(worstExp, std::abs(device::vmath::exp(x) - e) / e);
    const double m = std::expm1(static_cast<double>(x));
    worstExpm1 =
        std::max(worstExpm1, std::abs(device::vmath::expm1(x) - m) / std::max(std::abs(m), 1e-30));
    const float xe = x / 16.0f;  // [-5.5, 5.5]
    const double f = std::erf(static_cast<double>(xe));
    const double d = std::abs(device::vmath::erf(xe) - f);
    worstErfAbs = std::max(worstErfAbs, d);
    if (xe != 0.0f) worstErfRel = std::max(worstErfRel, d / std::abs(f));
  }
  EXPECT_LT(worstExp, 2e-7);
  EXPECT_LT(worstExpm1, 3e-7);
  EXPECT_LT(worstErfAbs, 2e-7);
  EXPECT_LT(worstErfRel, 3e-7);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(device::vmath::exp(-100.0f), 0.0f);
  EXPECT_EQ(device::vmath::exp(-inf), 0.0f);
  EXPECT_EQ(device::vmath::exp(100.0f), inf);
  EXPECT_EQ(device::vmath::exp(inf), inf);
  EXPECT_TRUE(std::isnan(device::vmath::exp(nan)));
  EXPECT_EQ(device::vmath::expm1(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(device::vmath::expm1(nan)));
  EXPECT_EQ(device::vmath::erf(inf), 1.0f);
  EXPECT_EQ(device::vmath::erf(-inf), -1.0f);
  EXPECT_EQ(device::vmath::erf(30.0f), 1.0f);
  EXPECT_EQ(device::vmath::erf(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(device::vmath::erf(-0.0f)));
  EXPECT_TRUE(std::isnan(device::vmath::erf(nan)));
  EXPECT_NEAR(device::vmath::erf(1e-30f), 1.1283791670955126e-30, 1e-37);
}

// The building blocks shared with the recurrent kernels' vector code: horner is Horner's rule
// (subtraction by a negative coefficient), and expInRange gives a V4 lane the same bits as the
// float it holds.
TEST(VectorMath, SharedCoreIsOneComputationForFloatAndV4) {
  using device::vmath::V4;
  EXPECT_EQ(device::vmath::horner(2.0f, 1.0f, -3.0f, 5.0f), 3.0f);  // 4 - 6 + 5
  EXPECT_EQ(device::vmath::horner(7.0f, 2.5f), 2.5f);
  for (int i = -870; i <= 880; i += 4) {
    const float x[4] = {static_cast<float>(i) * 0.1f, static_cast<float>(i + 1) * 0.1f,
                        static_cast<float>(i + 2) * 0.1f, static_cast<float>(i + 3) * 0.1f};
    V4 v;
    std::memcpy(&v, x, sizeof v);
    const V4 y = device::vmath::expInRange(v);
    float got[4];
    std::memcpy(got, &y, sizeof got);
    for (int k = 0; k < 4; ++k) {
      if (x[k] > 88.0f) continue;
      EXPECT_EQ(got[k], device::vmath::expInRange(x[k])) << x[k];
      EXPECT_EQ(got[k], device::vmath::exp(x[k])) << x[k];
    }
  }
}

TEST(VectorMath, Log1pSoftplusAndRoundings) {
  double worstLog1p = 0, worstSoftplus = 0, worstTanhSp = 0;
  for (int i = -1000000; i <= 1000000; ++i) {
    const float z = std::ldexp(static_cast<float>(std::abs(i)) / 1e6f + 0.5f,
                               (i % 60) - 30);  // 2^-31 .. 2^30, many mantissas
    const double l = std::log1p(static_cast<double>(z));
    worstLog1p = std::max(worstLog1p, std::abs(device::vmath::log1p(z) - l) / l);
    const float zn = -z / (z + 1.0f);  // (-1, 0)
    const double ln = std::log1p(static_cast<double>(zn));
    if (zn > -1.0f) {
      worstLog1p = std::max(worstLog1p, std::abs(device::vmath::log1p(zn) - ln) / std::abs(ln));
    }
    const float x = static_cast<float>(i) * 5e-5f;  // [-50, 50]
    const double sp = std::log1p(std::exp(static_cast<double>(x)));
    worstSoftplus = std::max(worstSoftplus, std::abs(device::vmath::softplus(x) - sp) / sp);
    const double t = std::tanh(sp);
    worstTanhSp = std::max(worstTanhSp, std::abs(device::vmath::tanhSoftplus(x) - t) / t);
  }
  EXPECT_LT(worstLog1p, 3e-7);
  EXPECT_LT(worstSoftplus, 5e-7);
  EXPECT_LT(worstTanhSp, 5e-7);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(device::vmath::log1p(0.0f), 0.0f);
  EXPECT_EQ(device::vmath::log1p(1e-30f), 1e-30f);
  EXPECT_EQ(device::vmath::log1p(-1.0f), -inf);
  EXPECT_EQ(device::vmath::log1p(inf), inf);
  EXPECT_TRUE(std::isnan(device::vmath::log1p(-2.0f)));
  EXPECT_TRUE(std::isnan(device::vmath::log1p(nan)));
  EXPECT_EQ(device::vmath::softplus(-inf), 0.0f);
  EXPECT_EQ(device::vmath::softplus(inf), inf);
  EXPECT_EQ(device::vmath::tanhSoftplus(inf), 1.0f);
  EXPECT_EQ(device::vmath::tanhSoftplus(-inf), 0.0f);
  // Roundings: exact, against libm, over halves, near-integers and large values.
  std::vector<float> xs{0.0f, -0.0f, inf, -inf, 8388607.5f, -8388607.5f, 8388609.0f, 1e20f, -1e20f};
  for (int i = -4000; i <= 4000; ++i) {
    xs.push_back(static_cast<float>(i) * 0.25f);
    xs.push_back(std::nextafter(static_cast<float>(i) * 0.5f, inf));
    xs.push_back(std::nextafter(static_cast<float>(i) * 0.5f, -inf));
  }
  for (float v : xs) {
    EXPECT_EQ(std::bit_cast<uint32_t>(device::vmath::nearbyint(v)),
              std::bit_cast<uint32_t>(std::nearbyint(v)))
        << v;
    EXPECT_EQ(std::bit_cast<uint32_t>(device::vmath::floor(v)),
              std::bit_cast<uint32_t>(std::floor(v)))
        << v;
    EXPECT_EQ(std::bit_cast<uint32_t>(device::vmath::ceil(v)),
              std::bit_cast<uint32_t>(std::ceil(v)))
        << v;
  }
  EXPECT_TRUE(std::isnan(device::vmath::nearbyint(nan)));
  EXPECT_TRUE(std::isnan(device::vmath::floor(nan)));
  EXPECT_TRUE(std::isnan(device::vmath::ceil(nan)));
}

// Where copies FLOAT16 elements as they are; Max, Clip and PRelu run promoted.
TEST(ElementwiseOps, Float16WhereMaxClipPRelu) {
  const HostTensor x = randomTensor({2, 3}, 5).castTo(DataType::FLOAT16);
  const HostTensor y = randomTensor({3}, 6).castTo(DataType::FLOAT16);
  auto c = boolTensor({2, 1}, {1, 0});
  auto w = runForward(op("Where"), {c, x, y});
  ASSERT_EQ(w[0].info(), TensorInfo(DataType::FLOAT16, {2, 3}));
  for (int64_t o = 0; o < 6; ++o) {
    EXPECT_EQ(w[0].getAsDouble(o), o < 3 ? x.getAsDouble(o) : y.getAsDouble(o % 3));
  }
  auto m = runForward(op("Max"), {x, y});
  for (int64_t o = 0; o < 6; ++o) {
    EXPECT_EQ(m[0].getAsDouble(o), std::max(x.getAsDouble(o), y.getAsDouble(o % 3)));
  }
  auto cl = runForward(op("Clip", attrs({{"min", -0.25f}, {"max", 0.5f}}), 6), {x});
  for (int64_t o = 0; o < 6; ++o) {
    EXPECT_EQ(cl[0].getAsDouble(o), std::clamp(x.getAsDouble(o), -0.25, 0.5));
  }
  // Clip-11 with a constant FLOAT bound on FLOAT16 data (PopART reads the bound as a float).
  auto cl11 = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        g.addTensor("lo", TensorInfo(DataType::FLOAT, {1}), ir::TensorKind::Const,
                    std::make_shared<HostTensor>(HostTensor::fromVector<float>({1}, {-0.25f})));
        return addOp(g, "Clip", {in[0], "lo"});
      },
      {x});
  ASSERT_EQ(cl11[0].dataType(), DataType::FLOAT16);
  for (int64_t o = 0; o < 6; ++o) {
    EXPECT_EQ(cl11[0].getAsDouble(o), std::max(x.getAsDouble(o), -0.25));
  }
  auto pr = runForward(op("PRelu"), {x, y});
  for (int64_t o = 0; o < 6; ++o) {
    const double v = x.getAsDouble(o);
    EXPECT_NEAR(pr[0].getAsDouble(o), v < 0 ? v * y.getAsDouble(o % 3) : v, 1e-3);
  }
}

TEST(VectorMath, SinCosWithinRange) {
  double worstSin = 0, worstCos = 0;
  for (int i = -3000000; i <= 3000000; ++i) {
    const float x = static_cast<float>(i) * 2e-3f;  // [-6000, 6000]
    if (std::abs(x) > device::vmath::kTrigMax) continue;
    worstSin = std::max(worstSin,
                        std::abs(device::vmath::sinBounded(x) - std::sin(static_cast<double>(x))));
    worstCos = std::max(worstCos,
                        std::abs(device::vmath::cosBounded(x) - std::cos(static_cast<double>(x))));
  }
  EXPECT_LT(worstSin, 2e-7);
  EXPECT_LT(worstCos, 2e-7);
  // Near multiples of pi the relative error of sin stays small.
  for (int k = -1900; k <= 1900; ++k) {
    const float x = static_cast<float>(k * 3.14159265358979323846);
    const double want = std::sin(static_cast<double>(x));
    EXPECT_NEAR(device::vmath::sinBounded(x), want, 1e-6 * std::abs(want) + 1e-12) << x;
  }
  EXPECT_TRUE(std::signbit(device::vmath::sinBounded(-0.0f)));
}

// The kernels take libm for arguments outside the vectorised range, inf and NaN.
TEST(ElementwiseOps, SinCosOutsideTheVectorisedRange) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = HostTensor::fromVector<float>({6}, {1.0f, 7000.0f, -1e7f, 3e38f, inf, 2.0f});
  auto s = runForward(op("Sin"), {x})[0];
  auto c = runForward(op("Cos"), {x})[0];
  for (int64_t i = 0; i < 6; ++i) {
    const float v = x.span<float>()[static_cast<size_t>(i)];
    if (std::isinf(v)) {
      EXPECT_TRUE(std::isnan(s.span<float>()[static_cast<size_t>(i)]));
      EXPECT_TRUE(std::isnan(c.span<float>()[static_cast<size_t>(i)]));
      continue;
    }
    EXPECT_NEAR(s.getAsDouble(i), std::sin(static_cast<double>(v)), 1e-6) << v;
    EXPECT_NEAR(c.getAsDouble(i), std::cos(static_cast<double>(v)), 1e-6) << v;
  }
  auto big = HostTensor::fromVector<float>({3}, {7000.5f, -8000.25f, 0.5f});
  GradCheckOptions coarse;  // x near 8000 has a float spacing of 5e-4
  coarse.eps = 5e-2;
  coarse.atol = 2e-2;
  expectGradientsMatch(op("Sin"), {big}, coarse);
  expectGradientsMatch(op("Cos"), {big}, coarse);
}

// ---- Floor, Ceil, Round, Sign, Abs

TEST(ElementwiseOps, StepFunctionsMatchReference) {
  auto x = HostTensor::fromVector<float>(
      {12}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.4f, 2.6f, -2.6f, 0.0f, 7.0f, -3.2f});
  auto fl = runForward(op("Floor"), {x});
  auto ce = runForward(op("Ceil"), {x});
  auto ro = runForward(op("Round"), {x});
  auto si = runForward(op("Sign"), {x});
  auto ab = runForward(op("Abs"), {x});
  // Round: halves to even.
  const std::vector<float> roundWant{-2, -2, -0, 0, 2, 2, 2, 3, -3, 0, 7, -3};
  for (int64_t i = 0; i < x.nelms(); ++i) {
    const double v = x.getAsDouble(i);
    EXPECT_EQ(fl[0].getAsDouble(i), std::floor(v));
    EXPECT_EQ(ce[0].getAsDouble(i), std::ceil(v));
    EXPECT_EQ(ro[0].getAsDouble(i), roundWant[static_cast<size_t>(i)]) << v;
    EXPECT_EQ(si[0].getAsDouble(i), v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0));
    EXPECT_EQ(ab[0].getAsDouble(i), std::abs(v));
  }
}

TEST(ElementwiseOps, StepFunctionsHaveZeroGradientAbsHasSign) {
  // Values away from the jumps, so finite differences see the flat parts.
  auto x = HostTensor::fromVector<float>({6}, {-2.3f, -1.7f, -0.3f, 0.3f, 1.2f, 2.7f});
  for (const char* type : {"Floor", "Ceil", "Round", "Sign", "Abs"}) {
    SCOPED_TRACE(type);
    expectGradientsMatch(op(type), {x});
  }
}

TEST(ElementwiseOps, AbsAndSignOnIntegers) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto x = HostTensor::fromVector<int64_t>({5}, {-7, 0, 3, kMin, 9});
  auto ab = runForward(op("Abs"), {x});
  EXPECT_EQ(ab[0].toVector<int64_t>(), (std::vector<int64_t>{7, 0, 3, kMin, 9}));
  auto si = runForward(op("Sign"), {x});
  EXPECT_EQ(si[0].toVector<int64_t>(), (std::vector<int64_t>{-1, 0, 1, -1, 1}));
  auto x32 = HostTensor::fromVector<int32_t>({3}, {-4, 0, 5});
  EXPECT_EQ(runForward(op("Abs"), {x32})[0].toVector<int32_t>(), (std::vector<int32_t>{4, 0, 5}));
  EXPECT_EQ(runForward(op("Sign"), {x32})[0].toVector<int32_t>(), (std::vector<int32_t>{-1, 0, 1}));
}

// ---- Clip

std::vector<float> clipRef(const HostTensor& x, double lo, double hi) {
  std::vector<float> r;
  for (int64_t i = 0; i < x.nelms(); ++i) {
    r.push_back(static_cast<float>(std::min(std::max(x.getAsDouble(i), lo), hi)));
  }
  return r;
}

TEST(ClipOp, Opset6Attributes) {
  auto x = randomTensor({3, 4}, 5, -2, 2);
  auto out = runForward(op("Clip", attrs({{"min", -0.5f}, {"max", 0.75f}}), 6), {x});
  EXPECT_EQ(out[0].toVector<float>(), clipRef(x, -0.5, 0.75));
  auto onlyMax = runForward(op("Clip", attrs({{"max", 0.1f}}), 6), {x});
  EXPECT_EQ(onlyMax[0].toVector<float>(), clipRef(x, -1e30, 0.1));
  expectGradientsMatch(op("Clip", attrs({{"min", -0.5f}, {"max", 0.75f}}), 6), {x});
  // Clip-6's default bounds are FLOAT's extremes; from opset 11 an absent bound does not clip.
  const float inf = std::numeric_limits<float>::infinity();
  const float big = std::numeric_limits<float>::max();
  auto infs = HostTensor::fromVector<float>({3}, {-inf, 1, inf});
  EXPECT_EQ(runForward(op("Clip", {}, 6), {infs})[0].toVector<float>(),
            (std::vector<float>{-big, 1, big}));
  EXPECT_EQ(runForward(op("Clip", {}, 11), {infs})[0].toVector<float>(),
            (std::vector<float>{-inf, 1, inf}));
}

// From opset 11 the bounds are optional inputs; constant ones become attributes.
TEST(ClipOp, Opset11And13ConstantInputs) {
  auto x = randomTensor({3, 4}, 6, -2, 2);
  for (int opset : {11, 12, 13}) {
    SCOPED_TRACE(opset);
    auto build = [opset](ir::Graph& g, auto in) {
      g.addTensor("lo", TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Const,
                  std::make_shared<HostTensor>(HostTensor::scalar(-0.25f)));
      g.addTensor("hi", TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Const,
                  std::make_shared<HostTensor>(HostTensor::scalar(0.5f)));
      auto outs = addOp(g, "Clip", {in[0], "lo", "hi"}, {}, 1, ir::kOnnxDomain, opset);
      const auto& clip = g.op(g.tensor(outs[0]).producer);
      EXPECT_EQ(clip.inputs.size(), 1u);
      EXPECT_EQ(clip.attrs.getFloat("min"), -0.25f);
      EXPECT_EQ(clip.attrs.getFloat("max"), 0.5f);
      // Absent min (""), constant max.
      auto o2 = addOp(g, "Clip", {in[0], "", "hi"}, {}, 1, ir::kOnnxDomain, opset);
      // No bounds at all: the identity.
      auto o3 = addOp(g, "Clip", {in[0]}, {}, 1, ir::kOnnxDomain, opset);
      return std::vector<TensorId>{outs[0], o2[0], o3[0]};
    };
    auto out = runForward(build, {x});
    EXPECT_EQ(out[0].toVector<float>(), clipRef(x, -0.25, 0.5));
    EXPECT_EQ(out[1].toVector<float>(), clipRef(x, -1e30, 0.5));
    EXPECT_EQ(out[2].toVector<float>(), x.toVector<float>());
    expectGradientsMatch(build, {x});
  }
}

// Bounds computed at run time stay inputs.
TEST(ClipOp, RuntimeBoundsAndMinAboveMax) {
  auto x = randomTensor({10}, 7, -2, 2);
  auto out = runForward(op("Clip"), {x, HostTensor::scalar(-0.3f), HostTensor::scalar(0.4f)});
  EXPECT_EQ(out[0].toVector<float>(), clipRef(x, -0.3, 0.4));
  // Gradients for the bounds too (the sum of gy where x is outside).
  expectGradientsMatch(op("Clip"), {x, HostTensor::scalar(-0.3f), HostTensor::scalar(0.4f)});
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Clip", {in[0], "", in[1]}, {}, 1, ir::kOnnxDomain, 13);
      },
      {x, HostTensor::fromVector<float>({1}, {0.2f})});
  // min > max: every element becomes max (ONNX).
  auto swapped = runForward(op("Clip"), {x, HostTensor::scalar(1.0f), HostTensor::scalar(-1.0f)});
  EXPECT_EQ(swapped[0].toVector<float>(), std::vector<float>(10, -1.0f));
}

TEST(ClipOp, Integers) {
  const int64_t big = (int64_t{1} << 40) + 3;
  auto x = HostTensor::fromVector<int64_t>({5}, {-big, -5, 0, 5, big});
  auto out = runForward(op("Clip"), {x, HostTensor::fromVector<int64_t>({}, {-4}),
                                     HostTensor::fromVector<int64_t>({}, {big - 1})});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{-4, -4, 0, 5, big - 1}));
  auto x32 = HostTensor::fromVector<int32_t>({3}, {-9, 1, 9});
  auto o32 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Clip", {in[0], "", in[1]}, {}, 1, ir::kOnnxDomain, 13);
      },
      {x32, HostTensor::fromVector<int32_t>({1}, {2})});
  EXPECT_EQ(o32[0].toVector<int32_t>(), (std::vector<int32_t>{-9, 1, 2}));
}

TEST(ClipOp, Errors) {
  auto x = randomTensor({3}, 8);
  expectError(
      [&] {
        runForward(op("Clip", {}, 6), {x, HostTensor::scalar(0.0f)});
      },
      {"Clip", "opset 6", "attributes"});
  expectError(
      [&] {
        runForward(op("Clip"), {x, HostTensor::fromVector<float>({2}, {0, 1})});
      },
      {"Clip", "min", "scalar"});
  expectError(
      [&] {
        runForward(op("Clip"), {x, HostTensor::fromVector<int64_t>({}, {0})});
      },
      {"Clip", "INT64", "one element type"});
  // Float attributes on integer data must fit the type.
  auto xi = HostTensor::fromVector<int64_t>({3}, {-5, 0, 5});
  EXPECT_EQ(runForward(op("Clip", attrs({{"min", -2.0f}, {"max", 3.0f}}), 6), {xi})[0]
                .toVector<int64_t>(),
            (std::vector<int64_t>{-2, 0, 3}));
  expectError(
      [&] {
        runForward(op("Clip", attrs({{"max", 9.3e18f}}), 6), {xi});
      },
      {"Clip", "max", "outside the range of INT64"});
}

// ---- Max, Min

TEST(MaxMinOp, VariadicBroadcastingMatchesReference) {
  auto a = randomTensor({2, 3, 4}, 1);
  auto b = randomTensor({3, 1}, 2);
  auto c = randomTensor({4}, 3);
  const Shape out{2, 3, 4};
  for (const char* type : {"Max", "Min"}) {
    SCOPED_TRACE(type);
    const bool isMax = std::string(type) == "Max";
    auto y = runForward(op(type), {a, b, c});
    ASSERT_EQ(y[0].shape(), out);
    for (int64_t o = 0; o < 24; ++o) {
      double want = a.getAsDouble(o);
      for (const HostTensor* t : {&b, &c}) {
        const double v = t->getAsDouble(broadcastIndex(o, out, t->shape()));
        want = isMax ? std::max(want, v) : std::min(want, v);
      }
      EXPECT_EQ(y[0].getAsDouble(o), want) << o;
    }
    expectGradientsMatch(op(type), {a, b, c});
    expectGradientsMatch(op(type), {c, a});
    expectGradientsMatch(op(type), {a});
  }
}

struct Grads {
  std::vector<HostTensor> outputs;
  std::vector<HostTensor> grads;  // empty HostTensor when an input got no gradient
};
Grads gradientsOf(const BuildFn& build, const std::vector<HostTensor>& inputs);

TEST(MaxMinOp, TiesGoToTheFirstInput) {
  auto a = HostTensor::fromVector<float>({4}, {1, 2, 3, 4});
  auto b = HostTensor::fromVector<float>({4}, {1, 5, 3, 0});
  auto c = HostTensor::fromVector<float>({}, {3});
  auto r = gradientsOf(op("Max"), {a, b, c});
  // Max = {3, 5, 3, 4}: element 0 from c; element 2 ties a, b and c -> a.
  EXPECT_EQ(r.outputs[0].toVector<float>(), (std::vector<float>{3, 5, 3, 4}));
  EXPECT_EQ(r.grads[0].toVector<float>(), (std::vector<float>{0, 0, 1, 1}));
  EXPECT_EQ(r.grads[1].toVector<float>(), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(r.grads[2].toVector<float>(), (std::vector<float>{1}));
  auto m = gradientsOf(op("Min"), {a, b, c});
  EXPECT_EQ(m.outputs[0].toVector<float>(), (std::vector<float>{1, 2, 3, 0}));
  EXPECT_EQ(m.grads[0].toVector<float>(), (std::vector<float>{1, 1, 1, 0}));
  EXPECT_EQ(m.grads[1].toVector<float>(), (std::vector<float>{0, 0, 0, 1}));
  EXPECT_EQ(m.grads[2].toVector<float>(), (std::vector<float>{0}));
}

TEST(MaxMinOp, IntegersAndNaN) {
  auto a = HostTensor::fromVector<int64_t>({2, 2}, {1, -7, 30, 4});
  auto b = HostTensor::fromVector<int64_t>({2}, {2, -9});
  EXPECT_EQ(runForward(op("Max"), {a, b})[0].toVector<int64_t>(),
            (std::vector<int64_t>{2, -7, 30, 4}));
  EXPECT_EQ(runForward(op("Min"), {a, b})[0].toVector<int64_t>(),
            (std::vector<int64_t>{1, -9, 2, -9}));
  auto a32 = HostTensor::fromVector<int32_t>({2}, {5, -5});
  auto b32 = HostTensor::fromVector<int32_t>({}, {0});
  EXPECT_EQ(runForward(op("Max"), {a32, b32})[0].toVector<int32_t>(), (std::vector<int32_t>{5, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto f = runForward(op("Max"), {HostTensor::fromVector<float>({2}, {nan, 1}),
                                  HostTensor::fromVector<float>({2}, {1, nan})});
  EXPECT_TRUE(std::isnan(f[0].span<float>()[0]));
  EXPECT_TRUE(std::isnan(f[0].span<float>()[1]));
}

TEST(MaxMinOp, Opset7NeedsEqualShapes) {
  auto a = randomTensor({2, 3}, 1);
  auto b = randomTensor({3}, 2);
  expectError([&] { runForward(op("Max", {}, 7), {a, b}); }, {"Max", "opset 7", "equal shapes"});
  EXPECT_EQ(runForward(op("Min", {}, 8), {a, b})[0].shape(), (Shape{2, 3}));
  expectError(
      [&] {
        runForward(op("Max"), {a, HostTensor::fromVector<int64_t>({1}, {1})});
      },
      {"Max", "different types"});
  expectError([&] { runForward(op("Min"), {a, randomTensor({4}, 3)}); }, {"Min", "broadcast"});
}

// ---- PRelu

TEST(PReluOp, SlopeBroadcastsToX) {
  auto x = randomTensor({2, 3, 2, 2}, 1, -1, 1);
  for (const Shape& s : {Shape{3, 1, 1}, Shape{1}, Shape{2, 3, 2, 2}, Shape{2}}) {
    SCOPED_TRACE(shapeToString(s));
    auto slope = randomTensor(s, 2, 0.1f, 0.5f);
    auto y = runForward(op("PRelu"), {x, slope});
    for (int64_t o = 0; o < x.nelms(); ++o) {
      const double v = x.getAsDouble(o);
      const double sl = slope.getAsDouble(broadcastIndex(o, x.shape(), s));
      EXPECT_FLOAT_EQ(static_cast<float>(y[0].getAsDouble(o)),
                      static_cast<float>(v < 0 ? sl * v : v));
    }
    expectGradientsMatch(op("PRelu"), {x, slope});
  }
  expectError([&] { runForward(op("PRelu"), {x, randomTensor({3}, 3)}); }, {"PRelu"});
  // Unidirectional: a slope bigger than X is an error.
  expectError(
      [&] {
        runForward(op("PRelu"), {randomTensor({2}, 4), randomTensor({3, 2}, 5)});
      },
      {"PRelu", "slope", "unidirectional"});
}

// ---- Mod

template <typename T>
T modRef(T a, T b, bool fmod) {
  if (fmod) return static_cast<T>(std::fmod(static_cast<double>(a), static_cast<double>(b)));
  T r = static_cast<T>(std::fmod(static_cast<double>(a), static_cast<double>(b)));
  if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  return r;
}

template <typename T>
void checkIntegerMod() {
  auto a = HostTensor::fromVector<T>({2, 4}, {7, -7, 7, -7, 13, -13, 0, 5});
  auto b = HostTensor::fromVector<T>({4}, {3, 3, -3, -3});
  for (int64_t fmod : {0, 1}) {
    auto y = runForward(op("Mod", attrs({{"fmod", fmod}}), 10), {a, b});
    auto got = y[0].template toVector<T>();
    for (int64_t o = 0; o < 8; ++o) {
      const T av = a.template span<T>()[static_cast<size_t>(o)];
      const T bv = b.template span<T>()[static_cast<size_t>(o % 4)];
      EXPECT_EQ(got[static_cast<size_t>(o)], modRef(av, bv, fmod == 1))
          << av << " mod " << bv << " fmod " << fmod;
    }
  }
}

TEST(ModOp, IntegersBothSigns) {
  checkIntegerMod<int32_t>();
  checkIntegerMod<int64_t>();
  // Python's -7 % 3 == 2, C's -7 % 3 == -1.
  auto y = runForward(op("Mod"), {HostTensor::fromVector<int64_t>({}, {-7}),
                                  HostTensor::fromVector<int64_t>({}, {3})});
  EXPECT_EQ(y[0].toVector<int64_t>(), std::vector<int64_t>{2});
  // INT_MIN mod -1 is 0, not a trap.
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto z = runForward(op("Mod"), {HostTensor::fromVector<int64_t>({}, {kMin}),
                                  HostTensor::fromVector<int64_t>({}, {-1})});
  EXPECT_EQ(z[0].toVector<int64_t>(), std::vector<int64_t>{0});
}

TEST(ModOp, FloatFmodAndGradient) {
  auto a = HostTensor::fromVector<float>({2, 3}, {5.5f, -5.5f, 7.25f, -7.25f, 0.3f, 4.1f});
  auto b = HostTensor::fromVector<float>({3}, {2.0f, -1.5f, 3.0f});
  auto y = runForward(op("Mod", attrs({{"fmod", int64_t{1}}})), {a, b});
  for (int64_t o = 0; o < 6; ++o) {
    const double want = std::fmod(a.getAsDouble(o), b.getAsDouble(o % 3));
    EXPECT_NEAR(y[0].getAsDouble(o), want, 1e-6) << o;
  }
  expectGradientsMatch(op("Mod", attrs({{"fmod", int64_t{1}}})), {a, b});
}

// fmod = 0 on floats (PopART's extension of ONNX): Python's %, the divisor's sign.
TEST(ModOp, FloatPythonRemainderAndGradient) {
  auto a = HostTensor::fromVector<float>({2, 3}, {5.5f, -5.5f, 7.25f, -7.25f, 0.3f, 4.1f});
  auto b = HostTensor::fromVector<float>({3}, {2.0f, -1.5f, 3.0f});
  auto y = runForward(op("Mod"), {a, b});
  for (int64_t o = 0; o < 6; ++o) {
    const double x = a.getAsDouble(o), d = b.getAsDouble(o % 3);
    EXPECT_NEAR(y[0].getAsDouble(o), x - d * std::floor(x / d), 1e-6) << o;
  }
  expectGradientsMatch(op("Mod"), {a, b});
}

TEST(ModOp, Errors) {
  auto a = randomTensor({3}, 1);
  expectError(
      [&] {
        runForward(op("Mod", attrs({{"fmod", int64_t{2}}})), {a, a});
      },
      {"Mod", "fmod is 2"});
  auto i = HostTensor::fromVector<int32_t>({3}, {1, 2, 3});
  auto z = HostTensor::fromVector<int32_t>({3}, {1, 0, 3});
  expectError([&] { runForward(op("Mod"), {i, z}); }, {"Mod", "division by zero"});
}

// ---- Where

TEST(WhereOp, BroadcastsAllThree) {
  auto c = boolTensor({2, 1, 3}, {1, 0, 1, 0, 0, 1});
  auto x = randomTensor({4, 1}, 1);
  auto y = randomTensor({3}, 2);
  auto out = runForward(op("Where"), {c, x, y});
  const Shape s{2, 4, 3};
  ASSERT_EQ(out[0].shape(), s);
  const auto cv = boolValues(c);
  for (int64_t o = 0; o < 24; ++o) {
    const bool take = cv[static_cast<size_t>(broadcastIndex(o, s, c.shape()))] != 0;
    const double want = take ? x.getAsDouble(broadcastIndex(o, s, x.shape()))
                             : y.getAsDouble(broadcastIndex(o, s, y.shape()));
    EXPECT_EQ(out[0].getAsDouble(o), want) << o;
  }
  expectGradientsMatch(op("Where"), {c, x, y});
  // Equal shapes and scalar branches (the fast paths), with gradients.
  auto c2 = boolTensor({4}, {1, 0, 0, 1});
  auto x2 = randomTensor({4}, 3);
  auto s2 = HostTensor::scalar(-9.0f);
  auto o2 = runForward(op("Where"), {c2, x2, s2});
  EXPECT_EQ(o2[0].toVector<float>(),
            (std::vector<float>{x2.span<float>()[0], -9, -9, x2.span<float>()[3]}));
  auto o3 = runForward(op("Where"), {c2, s2, x2});
  EXPECT_EQ(o3[0].toVector<float>(),
            (std::vector<float>{-9, x2.span<float>()[1], x2.span<float>()[2], -9}));
  expectGradientsMatch(op("Where"), {c2, x2, s2});
  expectGradientsMatch(op("Where"), {c2, x2, randomTensor({4}, 9)});
}

TEST(WhereOp, IntegersAndErrors) {
  auto c = boolTensor({3}, {1, 0, 1});
  auto out = runForward(op("Where"), {c, HostTensor::fromVector<int64_t>({3}, {1, 2, 3}),
                                      HostTensor::fromVector<int64_t>({}, {-1})});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{1, -1, 3}));
  auto b = runForward(op("Where"), {c, boolTensor({}, {0}), boolTensor({3}, {1, 1, 0})});
  EXPECT_EQ(boolValues(b[0]), (std::vector<int>{0, 1, 0}));
  auto x = randomTensor({3}, 1);
  expectError([&] { runForward(op("Where"), {x, x, x}); }, {"Where", "condition", "BOOL"});
  expectError(
      [&] {
        runForward(op("Where"), {c, x, HostTensor::fromVector<int64_t>({1}, {1})});
      },
      {"Where", "different types"});
  expectError(
      [&] {
        runForward(op("Where"), {c, randomTensor({2}, 2), x});
      },
      {"Where", "broadcast"});
}

// ---- Comparisons, logical ops

struct CompareCase {
  std::string type;
  std::function<bool(double, double)> ref;
};

TEST(CompareOps, AllTypesBroadcastToBool) {
  const std::vector<CompareCase> cases{
      {"Equal", [](double a, double b) { return a == b; }},
      {"Less", [](double a, double b) { return a < b; }},
      {"LessOrEqual", [](double a, double b) { return a <= b; }},
      {"Greater", [](double a, double b) { return a > b; }},
      {"GreaterOrEqual", [](double a, double b) { return a >= b; }},
  };
  const Shape s{2, 3};
  const std::vector<HostTensor> as{
      HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
      HostTensor::fromVector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}),
      HostTensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}),
  };
  const std::vector<HostTensor> bs{
      HostTensor::fromVector<float>({3}, {1, 5, 2}),
      HostTensor::fromVector<int32_t>({2, 1}, {2, 5}),
      HostTensor::fromVector<int64_t>({}, {3}),
  };
  for (const auto& c : cases) {
    for (size_t k = 0; k < as.size(); ++k) {
      SCOPED_TRACE(c.type + " " + as[k].info().toString());
      auto out = runForward(op(c.type, {}, c.type.find("OrEqual") != std::string::npos ? 12 : 11),
                            {as[k], bs[k]});
      ASSERT_EQ(out[0].info(), TensorInfo(DataType::BOOL, s));
      const auto got = boolValues(out[0]);
      for (int64_t o = 0; o < 6; ++o) {
        const double b = bs[k].getAsDouble(broadcastIndex(o, s, bs[k].shape()));
        EXPECT_EQ(got[static_cast<size_t>(o)], c.ref(as[k].getAsDouble(o), b) ? 1 : 0) << o;
      }
    }
  }
  auto eq = runForward(op("Equal", {}, 7),
                       {boolTensor({4}, {0, 0, 1, 1}), boolTensor({4}, {0, 1, 0, 1})});
  EXPECT_EQ(boolValues(eq[0]), (std::vector<int>{1, 0, 0, 1}));
}

TEST(CompareOps, Errors) {
  auto f = randomTensor({2}, 1);
  auto i = HostTensor::fromVector<int64_t>({2}, {1, 2});
  expectError([&] { runForward(op("Less"), {f, i}); }, {"Less", "different types"});
  expectError(
      [&] {
        runForward(op("Greater"), {boolTensor({1}, {1}), boolTensor({1}, {0})});
      },
      {"Greater", "BOOL"});
  expectError([&] { runForward(op("Equal"), {f, randomTensor({3}, 2)}); }, {"Equal", "broadcast"});
}

TEST(LogicalOps, TruthTablesWithBroadcasting) {
  auto a = boolTensor({2, 2}, {0, 0, 1, 1});
  auto b = boolTensor({2}, {0, 1});
  EXPECT_EQ(boolValues(runForward(op("And"), {a, b})[0]), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(boolValues(runForward(op("Or"), {a, b})[0]), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(boolValues(runForward(op("Xor"), {a, b})[0]), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(boolValues(runForward(op("Not"), {a})[0]), (std::vector<int>{1, 1, 0, 0}));
  expectError([&] { runForward(op("And"), {a, randomTensor({2}, 1)}); }, {"And", "BOOL"});
  expectError([&] { runForward(op("Not"), {randomTensor({2}, 1)}); }, {"Not", "BOOL"});
}

// Comparisons feed Where without a gradient of their own: masked_fill as PyTorch exports it.
TEST(CompareOps, MaskedFillGradientFlowsThroughWhere) {
  auto mask = HostTensor::fromVector<int64_t>({1, 4}, {1, 1, 0, 1});
  auto x = randomTensor({3, 4}, 5);
  auto build = [](ir::Graph& g, auto in) {
    auto eq = addOp(g, "Equal", {in[1], "zero"});
    return addOp(g, "Where", {eq[0], "fill", in[0]});
  };
  auto withConsts = [&](ir::Graph& g, auto in) {
    g.addTensor("zero", TensorInfo(DataType::INT64, {}), ir::TensorKind::Const,
                std::make_shared<HostTensor>(HostTensor::fromVector<int64_t>({}, {0})));
    g.addTensor("fill", TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Const,
                std::make_shared<HostTensor>(HostTensor::scalar(-5.0f)));
    return build(g, in);
  };
  auto y = runForward(withConsts, {x, mask});
  for (int64_t o = 0; o < 12; ++o) {
    EXPECT_EQ(y[0].getAsDouble(o), o % 4 == 2 ? -5.0 : x.getAsDouble(o));
  }
  expectGradientsMatch(withConsts, {x, mask}, {.wrt = {0}});
}

// ---- Integer Add, Sub, Mul, Div

template <typename T>
void checkIntegerArithmetic() {
  auto a = HostTensor::fromVector<T>({2, 3}, {7, -7, 9, 100, -101, 0});
  auto b = HostTensor::fromVector<T>({3}, {2, 2, -4});
  const Shape s{2, 3};
  for (const char* type : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(std::string(type) + " " + dataTypeName(a.dataType()));
    auto y = runForward(op(type), {a, b});
    ASSERT_EQ(y[0].info(), TensorInfo(a.dataType(), s));
    auto got = y[0].template toVector<T>();
    for (int64_t o = 0; o < 6; ++o) {
      const int64_t av = static_cast<int64_t>(a.getAsDouble(o));
      const int64_t bv = static_cast<int64_t>(b.getAsDouble(o % 3));
      const std::string t = type;
      const int64_t want = t == "Add"   ? av + bv
                           : t == "Sub" ? av - bv
                           : t == "Mul" ? av * bv
                                        : av / bv;
      EXPECT_EQ(static_cast<int64_t>(got[static_cast<size_t>(o)]), want) << av << " " << bv;
    }
  }
  // Scalar operands on either side.
  auto sc = HostTensor::fromVector<T>({}, {3});
  EXPECT_EQ(runForward(op("Div"), {a, sc})[0].template toVector<T>(),
            (std::vector<T>{2, -2, 3, 33, -33, 0}));
  EXPECT_EQ(runForward(op("Sub"), {sc, a})[0].template toVector<T>(),
            (std::vector<T>{-4, 10, -6, -97, 104, 3}));
}

TEST(IntegerArithmetic, AddSubMulDivTruncate) {
  checkIntegerArithmetic<int32_t>();
  checkIntegerArithmetic<int64_t>();
}

TEST(IntegerArithmetic, DivisionByZeroIsAnErrorOverflowWraps) {
  auto a = HostTensor::fromVector<int64_t>({2}, {4, 5});
  auto z = HostTensor::fromVector<int64_t>({2}, {1, 0});
  expectError([&] { runForward(op("Div"), {a, z}); }, {"Div", "division by zero"});
  expectError(
      [&] {
        runForward(op("Div"), {HostTensor::fromVector<int32_t>({2}, {4, 5}),
                               HostTensor::fromVector<int32_t>({}, {0})});
      },
      {"Div", "division by zero"});
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  auto m = HostTensor::fromVector<int32_t>({2}, {kMin, kMax});
  EXPECT_EQ(
      runForward(op("Div"), {m, HostTensor::fromVector<int32_t>({}, {-1})})[0].toVector<int32_t>(),
      (std::vector<int32_t>{kMin, -kMax}));
  EXPECT_EQ(
      runForward(op("Add"), {m, HostTensor::fromVector<int32_t>({}, {1})})[0].toVector<int32_t>(),
      (std::vector<int32_t>{kMin + 1, kMin}));
  // Floats divide by zero as IEEE does.
  auto f = runForward(op("Div"), {HostTensor::scalar(1.0f), HostTensor::scalar(0.0f)});
  EXPECT_TRUE(std::isinf(f[0].span<float>()[0]));
  expectError(
      [&] {
        runForward(op("Add"), {boolTensor({1}, {1}), boolTensor({1}, {1})});
      },
      {"Add", "BOOL", "INT64"});
}

TEST(IntegerArithmetic, SumOfIntegers) {
  auto a = HostTensor::fromVector<int64_t>({2, 2}, {1, 2, 3, 4});
  auto b = HostTensor::fromVector<int64_t>({2}, {10, 20});
  auto c = HostTensor::fromVector<int64_t>({}, {100});
  EXPECT_EQ(runForward(op("Sum"), {a, b, c})[0].toVector<int64_t>(),
            (std::vector<int64_t>{111, 122, 113, 124}));
  auto a32 = HostTensor::fromVector<int32_t>({2}, {1, -2});
  EXPECT_EQ(runForward(op("Sum"), {a32, a32})[0].toVector<int32_t>(),
            (std::vector<int32_t>{2, -4}));
}

// PyTorch's export of integer floor division (torch // on INT64, opset 10+): Div, Less, Xor, Mod,
// Equal, Not, And, Sub, Where, all on INT64, as constant folding evaluates it.
TEST(IntegerArithmetic, ExportedFloorDivisionChain) {
  const std::vector<int64_t> as{7, -7, 7, -7, 6, -6, 0, 1, -1, 100};
  const std::vector<int64_t> bs{2, 2, -2, -2, 3, 3, 5, -3, 3, -7};
  const int64_t n = static_cast<int64_t>(as.size());
  auto build = [](ir::Graph& g, auto in) {
    g.addTensor("zero", TensorInfo(DataType::INT64, {}), ir::TensorKind::Const,
                std::make_shared<HostTensor>(HostTensor::fromVector<int64_t>({}, {0})));
    g.addTensor("one", TensorInfo(DataType::INT64, {}), ir::TensorKind::Const,
                std::make_shared<HostTensor>(HostTensor::fromVector<int64_t>({}, {1})));
    auto div = addOp(g, "Div", {in[0], in[1]})[0];
    auto negative = addOp(
        g, "Xor", {addOp(g, "Less", {in[0], "zero"})[0], addOp(g, "Less", {in[1], "zero"})[0]})[0];
    auto mod = addOp(g, "Mod", {in[0], in[1]}, attrs({{"fmod", int64_t{0}}}))[0];
    auto inexact = addOp(g, "Not", {addOp(g, "Equal", {mod, "zero"})[0]})[0];
    auto fixupMask = addOp(g, "And", {negative, inexact})[0];
    auto fixup = addOp(g, "Sub", {div, "one"})[0];
    return addOp(g, "Where", {fixupMask, fixup, div});
  };
  auto y = runForward(
      build, {HostTensor::fromVector<int64_t>({n}, as), HostTensor::fromVector<int64_t>({n}, bs)});
  for (size_t i = 0; i < as.size(); ++i) {
    const int64_t q = as[i] / bs[i];
    const int64_t floorDiv = (as[i] % bs[i] != 0 && ((as[i] < 0) != (bs[i] < 0))) ? q - 1 : q;
    EXPECT_EQ(y[0].toVector<int64_t>()[i], floorDiv) << as[i] << " // " << bs[i];
  }
}

// Random broadcastable shapes (ranks 0-4, sizes 0-3, ones where broadcasting happens): every
// broadcasting kernel against the index mapping written in this test.
TEST(Broadcasting, RandomShapesAgainstReference) {
  std::mt19937_64 rng(42);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int trial = 0; trial < 150; ++trial) {
    const int rank = pick(5);
    Shape out;
    for (int d = 0; d < rank; ++d) out.push_back(pick(4));
    // An operand: a suffix of `out` with some dimensions set to 1.
    auto operand = [&] {
      const int r = pick(rank + 1);
      Shape s(out.end() - r, out.end());
      for (auto& d : s) {
        if (pick(3) == 0) d = 1;
      }
      return s;
    };
    const Shape sa = operand(), sb = operand(), sc = operand();
    SCOPED_TRACE(shapeToString(out) + " from " + shapeToString(sa) + " " + shapeToString(sb) + " " +
                 shapeToString(sc));
    auto a = randomTensor(sa, static_cast<uint64_t>(trial) * 3 + 1);
    auto b = randomTensor(sb, static_cast<uint64_t>(trial) * 3 + 2);
    auto c = randomTensor(sc, static_cast<uint64_t>(trial) * 3 + 3);
    HostTensor ai(TensorInfo(DataType::INT64, sa)), bi(TensorInfo(DataType::INT64, sb));
    for (int64_t i = 0; i < ai.nelms(); ++i) ai.setFromDouble(i, std::floor(a.getAsDouble(i) * 20));
    for (int64_t i = 0; i < bi.nelms(); ++i) {
      const double v = std::floor(b.getAsDouble(i) * 20);
      bi.setFromDouble(i, v == 0 ? 7 : v);
    }
    HostTensor cond(TensorInfo(DataType::BOOL, sc));
    for (int64_t i = 0; i < cond.nelms(); ++i) cond.setFromDouble(i, c.getAsDouble(i) > 0 ? 1 : 0);

    auto add = runForward(op("Add"), {a, b})[0];
    auto sub = runForward(op("Sub"), {ai, bi})[0];
    auto div = runForward(op("Div"), {ai, bi})[0];
    auto mod = runForward(op("Mod"), {ai, bi})[0];
    auto less = runForward(op("Less"), {a, b})[0];
    auto eq = runForward(op("Equal"), {ai, bi})[0];
    auto mx = runForward(op("Max"), {a, b, c})[0];
    auto mn = runForward(op("Min"), {ai, bi})[0];
    auto wh = runForward(op("Where"), {cond, a, b})[0];
    const Shape ab = add.shape();
    ASSERT_EQ(mx.shape(), wh.shape());
    for (int64_t o = 0; o < add.nelms(); ++o) {
      const int64_t ia = broadcastIndex(o, ab, sa), ib = broadcastIndex(o, ab, sb);
      EXPECT_FLOAT_EQ(static_cast<float>(add.getAsDouble(o)),
                      static_cast<float>(a.getAsDouble(ia) + b.getAsDouble(ib)));
      const auto x = static_cast<int64_t>(ai.getAsDouble(ia));
      const auto y = static_cast<int64_t>(bi.getAsDouble(ib));
      EXPECT_EQ(static_cast<int64_t>(sub.getAsDouble(o)), x - y);
      EXPECT_EQ(static_cast<int64_t>(div.getAsDouble(o)), x / y);
      EXPECT_EQ(static_cast<int64_t>(mod.getAsDouble(o)), modRef(x, y, false));
      EXPECT_EQ(less.getAsDouble(o), a.getAsDouble(ia) < b.getAsDouble(ib) ? 1 : 0);
      EXPECT_EQ(eq.getAsDouble(o), x == y ? 1 : 0);
      EXPECT_EQ(static_cast<int64_t>(mn.getAsDouble(o)), std::min(x, y));
    }
    const Shape s3 = mx.shape();
    for (int64_t o = 0; o < mx.nelms(); ++o) {
      const double va = a.getAsDouble(broadcastIndex(o, s3, sa));
      const double vb = b.getAsDouble(broadcastIndex(o, s3, sb));
      const double vc = c.getAsDouble(broadcastIndex(o, s3, sc));
      EXPECT_EQ(mx.getAsDouble(o), std::max({va, vb, vc}));
      EXPECT_EQ(wh.getAsDouble(o), cond.getAsDouble(broadcastIndex(o, s3, sc)) != 0 ? va : vb);
    }
    if (trial % 10 == 0 && mx.nelms() > 0) {
      expectGradientsMatch(op("Where"), {cond, a, b});
      expectGradientsMatch(op("Max"), {a, b, c});
    }
  }
}

// ---- helpers

// Analytic gradients of sum(outputs[0]) w.r.t. every floating-point input.
Grads gradientsOf(const BuildFn& build, const std::vector<HostTensor>& inputs) {
  ir::Graph g;
  std::vector<TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back("in" + std::to_string(i));
    g.addTensor(
        ids.back(), inputs[i].info(),
        isFloatingPoint(inputs[i].dataType()) ? ir::TensorKind::Variable : ir::TensorKind::Const,
        std::make_shared<HostTensor>(inputs[i]));
  }
  auto outs = build(g, ids);
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  auto loss = addOp(g, "ReduceSumToShape", {outs[0]}, a, 1, ir::kXtrainDomain);
  auto grads = ir::autodiff(g, loss[0], ids);
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  Grads r;
  for (const auto& o : outs)
    r.outputs.push_back(buffers[static_cast<size_t>(lowered.bufferIndex(o))]);
  for (const auto& id : ids) {
    auto it = grads.find(id);
    r.grads.push_back(it == grads.end()
                          ? HostTensor()
                          : buffers[static_cast<size_t>(lowered.bufferIndex(it->second))]);
  }
  return r;
}

}  // namespace
}  // namespace xtrain::testing
