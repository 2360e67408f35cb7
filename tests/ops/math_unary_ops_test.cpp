// The inverse and hyperbolic trigonometric ops, Tan, ai.graphcore Expm1/Log1p, Shrink and the
// ai.graphcore bitwise ops: forward against double-precision std:: references, gradients against
// finite differences, error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

using RefFn = std::function<double(double)>;

struct MathCase {
  std::string type;
  std::string domain;
  RefFn ref;
  float lo, hi;  // the input range: inside the function's domain, away from its poles
};

std::ostream& operator<<(std::ostream& os, const MathCase& c) {
  return os << c.type;
}

std::vector<MathCase> mathCases() {
  const std::string onnx = ir::kOnnxDomain, gc = ir::kGraphcoreDomain;
  return {
      {"Asin", onnx, [](double x) { return std::asin(x); }, -0.9f, 0.9f},
      {"Acos", onnx, [](double x) { return std::acos(x); }, -0.9f, 0.9f},
      {"Atan", onnx, [](double x) { return std::atan(x); }, -4, 4},
      {"Sinh", onnx, [](double x) { return std::sinh(x); }, -3, 3},
      {"Cosh", onnx, [](double x) { return std::cosh(x); }, -3, 3},
      {"Tan", onnx, [](double x) { return std::tan(x); }, -1.2f, 1.2f},
      {"Asinh", onnx, [](double x) { return std::asinh(x); }, -5, 5},
      {"Acosh", onnx, [](double x) { return std::acosh(x); }, 1.1f, 6},
      {"Atanh", onnx, [](double x) { return std::atanh(x); }, -0.9f, 0.9f},
      {"Expm1", gc, [](double x) { return std::expm1(x); }, -3, 3},
      {"Log1p", gc, [](double x) { return std::log1p(x); }, -0.8f, 4},
  };
}

HostTensor applyRef(const HostTensor& x, const RefFn& f) {
  HostTensor y(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) y.setFromDouble(i, f(x.getAsDouble(i)));
  return y;
}

class MathUnary : public ::testing::TestWithParam<MathCase> {
 protected:
  BuildFn build() const {
    const auto& c = GetParam();
    return [c](ir::Graph& g, auto in) { return addOp(g, c.type, in, {}, 1, c.domain); };
  }
};

TEST_P(MathUnary, MatchesReference) {
  const auto& c = GetParam();
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{}, Shape{0, 3}, Shape{1, 5}}) {
    const HostTensor x = randomTensor(shape, 11, c.lo, c.hi);
    auto out = runForward(build(), {x});
    EXPECT_TRUE(allClose(out[0], applyRef(x, c.ref), 2e-6, 1e-6))
        << c.type << " on " << shapeToString(shape);
  }
}

TEST_P(MathUnary, GradientMatchesFiniteDifferences) {
  const auto& c = GetParam();
  expectGradientsMatch(build(), {randomTensor({3, 5}, 21, c.lo, c.hi)});
}

TEST_P(MathUnary, Float16RunsInFloat) {
  const auto& c = GetParam();
  const HostTensor x = randomTensor({7}, 5, c.lo, c.hi);
  HostTensor h(TensorInfo(DataType::FLOAT16, {7}));
  for (int64_t i = 0; i < 7; ++i) h.setFromDouble(i, x.getAsDouble(i));
  auto out = runForward(build(), {h});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  for (int64_t i = 0; i < 7; ++i) {
    const double want = c.ref(h.getAsDouble(i));
    EXPECT_NEAR(out[0].getAsDouble(i), want, 2e-3 * std::max(1.0, std::fabs(want))) << c.type;
  }
}

TEST_P(MathUnary, RejectsIntegersNamingTheOp) {
  const auto& c = GetParam();
  auto a = HostTensor::fromVector<int32_t>({3}, {1, 2, 3});
  expectError([&] { runForward(build(), {a}); }, {c.type, "INT32[3]"});
}

INSTANTIATE_TEST_SUITE_P(Ops, MathUnary, ::testing::ValuesIn(mathCases()),
                         [](const auto& info) { return info.param.type; });

TEST(MathUnaryOps, OutsideTheDomainGivesNaN) {
  auto x = HostTensor::fromVector<float>({2}, {1.5f, -2.0f});
  for (const char* type : {"Asin", "Acos", "Atanh"}) {
    auto y = runForward([type](ir::Graph& g, auto in) { return addOp(g, type, in); }, {x});
    EXPECT_TRUE(std::isnan(y[0].getAsDouble(0)) && std::isnan(y[0].getAsDouble(1))) << type;
  }
  auto z = HostTensor::fromVector<float>({1}, {0.5f});
  auto y = runForward([](ir::Graph& g, auto in) { return addOp(g, "Acosh", in); }, {z});
  EXPECT_TRUE(std::isnan(y[0].getAsDouble(0)));
}

TEST(MathUnaryOps, Expm1AndLog1pAreAccurateNearZero) {
  auto x = HostTensor::fromVector<float>({3}, {1e-7f, -3e-8f, 0.0f});
  auto gc = [](const char* type) {
    return
        [type](ir::Graph& g, auto in) { return addOp(g, type, in, {}, 1, ir::kGraphcoreDomain); };
  };
  EXPECT_TRUE(allClose(runForward(gc("Expm1"), {x})[0],
                       applyRef(x, [](double v) { return std::expm1(v); }), 1e-6, 0));
  EXPECT_TRUE(allClose(runForward(gc("Log1p"), {x})[0],
                       applyRef(x, [](double v) { return std::log1p(v); }), 1e-6, 0));
}

// ---- Shrink

double shrinkRef(double x, double lambd, double bias) {
  return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0);
}

BuildFn shrink(Attributes a) {
  return [a](ir::Graph& g, auto in) { return addOp(g, "Shrink", in, a); };
}

TEST(ShrinkOp, HardAndSoftShrinkMatchReference) {
  const HostTensor x = randomTensor({4, 6}, 3, -3, 3);
  for (auto [lambd, bias] : {std::pair{0.5f, 0.0f}, std::pair{1.5f, 1.5f}, std::pair{0.0f, 0.2f}}) {
    auto y = runForward(shrink(attrs({{"lambd", lambd}, {"bias", bias}})), {x});
    EXPECT_TRUE(allClose(y[0], applyRef(x, [&](double v) { return shrinkRef(v, lambd, bias); })))
        << "lambd " << lambd << " bias " << bias;
  }
  // ONNX's defaults: bias 0, lambd 0.5.
  auto d = runForward(shrink({}), {x});
  EXPECT_TRUE(allClose(d[0], applyRef(x, [](double v) { return shrinkRef(v, 0.5, 0.0); })));
}

TEST(ShrinkOp, GradientMatchesFiniteDifferencesAwayFromTheEdges) {
  // |x| in [0.05, 0.45] or [0.55, 2]: no point within the finite difference step of +-lambd.
  auto x = HostTensor::fromVector<float>({8}, {-2, -0.9f, -0.4f, -0.05f, 0.1f, 0.45f, 0.6f, 1.7f});
  expectGradientsMatch(shrink(attrs({{"lambd", 0.5f}, {"bias", 0.3f}})), {x});
}

TEST(ShrinkOp, GradientIsHalfOnTheEdges) {
  // ShrinkGrad(gy, x) = gy (1 + sign(|x| - lambd)) / 2, as PopART: gy/2 where |x| == lambd.
  auto gy = HostTensor::fromVector<float>({5}, {2, 2, 2, 2, 2});
  auto x = HostTensor::fromVector<float>({5}, {-1.0f, -0.5f, 0.5f, 1.0f, 0.2f});
  auto gx = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ShrinkGrad", in, attrs({{"lambd", 0.5f}}), 1, ir::kXtrainDomain);
      },
      {gy, x});
  EXPECT_TRUE(allClose(gx[0], HostTensor::fromVector<float>({5}, {2, 1, 1, 2, 0})));
}

TEST(ShrinkOp, BadAttributesAndTypesAreRefused) {
  const HostTensor x = randomTensor({3}, 1);
  expectError([&] { runForward(shrink(attrs({{"lambd", -1.0f}})), {x}); }, {"Shrink", "lambd"});
  auto i = HostTensor::fromVector<int64_t>({2}, {1, 2});
  expectError([&] { runForward(shrink({}), {i}); }, {"Shrink", "INT64[2]"});
}

// ---- Bitwise

BuildFn bitwise(const std::string& type) {
  return [type](ir::Graph& g, auto in) { return addOp(g, type, in, {}, 1, ir::kGraphcoreDomain); };
}

TEST(BitwiseOps, Int32AndUint32MatchReference) {
  const std::vector<int32_t> a = {-7, 0, 5, 12, -1, 123456, std::numeric_limits<int32_t>::min()};
  const std::vector<int32_t> b = {3, -9, 6, 10, 77, -654321, 1};
  const Shape s{static_cast<int64_t>(a.size())};
  auto ta = HostTensor::fromVector<int32_t>(s, a), tb = HostTensor::fromVector<int32_t>(s, b);
  auto run = [&](const std::string& type, std::vector<HostTensor> in) {
    return runForward(bitwise(type), in)[0].toVector<int32_t>();
  };
  std::vector<int32_t> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) want[i] = ~a[i];
  EXPECT_EQ(run("BitwiseNot", {ta}), want);
  for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] & b[i];
  EXPECT_EQ(run("BitwiseAnd", {ta, tb}), want);
  for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] | b[i];
  EXPECT_EQ(run("BitwiseOr", {ta, tb}), want);
  for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] ^ b[i];
  EXPECT_EQ(run("BitwiseXor", {ta, tb}), want);
  for (size_t i = 0; i < a.size(); ++i) want[i] = ~(a[i] ^ b[i]);
  EXPECT_EQ(run("BitwiseXnor", {ta, tb}), want);

  auto ua = HostTensor::fromVector<uint32_t>({3}, {0u, 0xF0F0F0F0u, 0xFFFFFFFFu});
  auto ub = HostTensor::fromVector<uint32_t>({3}, {1u, 0x0FF00FF0u, 0x12345678u});
  EXPECT_EQ(runForward(bitwise("BitwiseNot"), {ua})[0].toVector<uint32_t>(),
            (std::vector<uint32_t>{0xFFFFFFFFu, 0x0F0F0F0Fu, 0u}));
  EXPECT_EQ(runForward(bitwise("BitwiseXor"), {ua, ub})[0].toVector<uint32_t>(),
            (std::vector<uint32_t>{1u, 0xFF00FF00u, 0xEDCBA987u}));
}

TEST(BitwiseOps, BroadcastAndOtherIntegerWidths) {
  auto a = HostTensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = HostTensor::fromVector<int64_t>({3}, {3, 3, 1});
  EXPECT_EQ(runForward(bitwise("BitwiseAnd"), {a, b})[0].toVector<int64_t>(),
            (std::vector<int64_t>{1, 2, 1, 0, 1, 0}));
  auto c = HostTensor::fromVector<uint8_t>({2}, {0x0F, 0xAA});
  EXPECT_EQ(runForward(bitwise("BitwiseNot"), {c})[0].toVector<uint8_t>(),
            (std::vector<uint8_t>{0xF0, 0x55}));
}

TEST(BitwiseOps, FloatsAndMixedTypesAreRefused) {
  const HostTensor f = randomTensor({2}, 1);
  expectError([&] { runForward(bitwise("BitwiseNot"), {f}); },
              {"BitwiseNot", "FLOAT[2]", "integer"});
  auto a = HostTensor::fromVector<int32_t>({2}, {1, 2});
  auto b = HostTensor::fromVector<uint32_t>({2}, {1, 2});
  expectError(
      [&] {
        runForward(bitwise("BitwiseOr"), {a, b});
      },
      {"BitwiseOr", "INT32[2]", "UINT32[2]", "one element type"});
  auto c = HostTensor::fromVector<int32_t>({3}, {1, 2, 3});
  expectError([&] { runForward(bitwise("BitwiseAnd"), {a, c}); }, {"BitwiseAnd"});
}

}  // namespace
}  // namespace xtrain::testing
