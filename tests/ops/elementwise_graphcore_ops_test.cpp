// PopART's ai.graphcore Atan2, Swish, GeluErf, NearbyInt and IncrementMod, and ai.onnx Mean:
// forward against double-precision references, gradients against finite differences, error
// messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

BuildFn graphcore(const std::string& type, Attributes a = {}) {
  return
      [type, a](ir::Graph& g, auto in) { return addOp(g, type, in, a, 1, ir::kGraphcoreDomain); };
}

// y[i] = f(x[i]) in double.
template <typename F>
HostTensor mapRef(const HostTensor& x, F f) {
  HostTensor y(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) y.setFromDouble(i, f(x.getAsDouble(i)));
  return y;
}

// ---- Atan2

TEST(Atan2Op, MatchesReferenceWithBroadcastingInEveryQuadrant) {
  const HostTensor y = randomTensor({2, 3, 4}, 1, -2, 2);
  const HostTensor x = randomTensor({3, 1}, 2, -2, 2);
  const HostTensor out = runForward(graphcore("Atan2"), {y, x})[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
  HostTensor want(out.info());
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 4; ++c) {
        const int64_t i = (a * 3 + b) * 4 + c;
        want.setFromDouble(i, std::atan2(y.getAsDouble(i), x.getAsDouble(b)));
      }
    }
  }
  EXPECT_TRUE(allClose(out, want, 1e-6, 1e-6));
  // The axes and the quadrants' corners: theta in (-pi, pi].
  auto py = HostTensor::fromVector<float>({4}, {0, 1, 0, -1});
  auto px = HostTensor::fromVector<float>({4}, {-1, 0, 1, -1});
  const double pi = std::acos(-1.0);
  EXPECT_TRUE(allClose(
      runForward(graphcore("Atan2"), {py, px})[0],
      HostTensor::fromVector<float>({4}, {static_cast<float>(pi), static_cast<float>(pi / 2), 0.0f,
                                          static_cast<float>(-3 * pi / 4)})));
}

TEST(Atan2Op, GradientsOfBothInputsMatchFiniteDifferences) {
  // Away from the origin, where the derivative grows without bound.
  expectGradientsMatch(graphcore("Atan2"), {randomTensor({3, 4}, 5, 0.5f, 2.0f),
                                            randomTensor({3, 4}, 6, -2.0f, -0.5f)});
  expectGradientsMatch(graphcore("Atan2"),
                       {randomTensor({2, 3, 4}, 7, 0.5f, 2.0f), randomTensor({4}, 8, 0.5f, 2.0f)});
}

TEST(Atan2Op, RejectsMixedAndIntegerTypes) {
  auto f = randomTensor({3}, 1);
  HostTensor h(TensorInfo(DataType::FLOAT16, {3}));
  expectError(
      [&] {
        runForward(graphcore("Atan2"), {f, h});
      },
      {"Atan2", "input 0 (Y)", "input 1 (X)", "FLOAT16[3]"});
  auto i = HostTensor::fromVector<int32_t>({3}, {1, 2, 3});
  expectError([&] { runForward(graphcore("Atan2"), {i, i}); }, {"Atan2", "INT32[3]"});
  expectError([&] { runForward(graphcore("Atan2"), {f, randomTensor({2}, 2)}); }, {"Atan2"});
}

// ---- Mean

BuildFn mean(int opset = 13) {
  return [opset](ir::Graph& g, auto in) {
    return addOp(g, "Mean", in, {}, 1, ir::kOnnxDomain, opset);
  };
}

TEST(MeanOp, MatchesReferenceWithBroadcasting) {
  const HostTensor a = randomTensor({2, 3, 4}, 1);
  const HostTensor b = randomTensor({3, 1}, 2);
  const HostTensor c = randomTensor({4}, 3);
  const HostTensor out = runForward(mean(), {a, b, c})[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
  HostTensor want(out.info());
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t row = (i / 4) % 3, col = i % 4;
    want.setFromDouble(i, (a.getAsDouble(i) + b.getAsDouble(row) + c.getAsDouble(col)) / 3.0);
  }
  EXPECT_TRUE(allClose(out, want, 1e-6, 1e-6));
  // One input: itself.
  EXPECT_TRUE(allClose(runForward(mean(), {a})[0], a));
}

TEST(MeanOp, GradientMatchesFiniteDifferences) {
  expectGradientsMatch(mean(), {randomTensor({2, 3, 4}, 1), randomTensor({3, 1}, 2),
                                randomTensor({4}, 3), randomTensor({2, 3, 4}, 4)});
}

TEST(MeanOp, BeforeOpset8TheShapesMustBeEqual) {
  const HostTensor a = randomTensor({2, 3}, 1), b = randomTensor({3}, 2);
  // PopART's sentence, then the inputs.
  expectError(
      [&] {
        runForward(mean(7), {a, b});
      },
      {"Mean", "Inputs to ai.onnx.Mean:6 do not all the same type & shape", "FLOAT[3]"});
  EXPECT_TRUE(allClose(runForward(mean(7), {a, a})[0], a));
  auto i = HostTensor::fromVector<int32_t>({2}, {1, 2});
  expectError([&] { runForward(mean(), {i, i}); }, {"Mean", "INT32[2]"});
}

// ---- Swish, GeluErf, NearbyInt

TEST(SwishOp, MatchesReferenceAndItsGradientFiniteDifferences) {
  const HostTensor x = randomTensor({3, 7}, 4, -6, 6);
  EXPECT_TRUE(allClose(runForward(graphcore("Swish"), {x})[0],
                       mapRef(x, [](double v) { return v / (1.0 + std::exp(-v)); }), 1e-6, 1e-6));
  expectGradientsMatch(graphcore("Swish"), {x});
}

TEST(GeluErfOp, IsTheExactGeluAndItsGradientMatchesFiniteDifferences) {
  const HostTensor x = randomTensor({4, 5}, 9, -4, 4);
  auto ref = [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); };
  EXPECT_TRUE(allClose(runForward(graphcore("GeluErf"), {x})[0], mapRef(x, ref), 1e-5, 1e-6));
  expectGradientsMatch(graphcore("GeluErf"), {x});
  // Where the tanh approximation (ai.graphcore Gelu) is off by more than 1e-4.
  auto far = HostTensor::fromVector<float>({1}, {-2.2f});
  EXPECT_TRUE(allClose(runForward(graphcore("GeluErf"), {far})[0], mapRef(far, ref), 1e-6, 1e-7));
}

TEST(NearbyIntOp, RoundsHalvesToEvenWithAZeroGradient) {
  auto x = HostTensor::fromVector<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 3.49f, -3.51f, 7});
  EXPECT_EQ(runForward(graphcore("NearbyInt"), {x})[0].toVector<float>(),
            (std::vector<float>{0, 2, 2, -0.0f, -2, 3, -4, 7}));
  // Away from the halves the finite differences are 0 too.
  auto y = HostTensor::fromVector<float>({4}, {0.2f, -1.3f, 2.9f, 4.0f});
  expectGradientsMatch(graphcore("NearbyInt"), {y});
}

TEST(ActivationOps, RejectIntegersNamingTheOp) {
  auto i = HostTensor::fromVector<int32_t>({3}, {1, 2, 3});
  for (const char* type : {"Swish", "GeluErf", "NearbyInt"}) {
    expectError([&] { runForward(graphcore(type), {i}); }, {type, "INT32[3]"});
  }
}

// ---- IncrementMod

BuildFn incrementMod(float increment, float modulus) {
  return graphcore("IncrementMod", attrs({{"increment", increment}, {"modulus", modulus}}));
}

TEST(IncrementModOp, IsCFmodOfTheSumInEveryType) {
  const std::vector<float> xs = {5, -5, 10, 1, 2, -7.5f};
  auto f = HostTensor::fromVector<float>({6}, xs);
  std::vector<float> want;
  for (float v : xs) want.push_back(std::fmod(v + 3.0f, 4.0f));
  EXPECT_EQ(runForward(incrementMod(3, 4), {f})[0].toVector<float>(), want);
  // INT32: the dividend's sign, as C and numpy's fmod.
  auto i = HostTensor::fromVector<int32_t>({4}, {5, -5, 10, std::numeric_limits<int32_t>::max()});
  EXPECT_EQ(runForward(incrementMod(3, 4), {i})[0].toVector<int32_t>(),
            (std::vector<int32_t>{0, -2, 1, -2}));  // INT32_MAX + 3 wraps to INT32_MIN + 2
  // UINT32: -5 is 2^32 - 5, and the sum wraps.
  auto u = HostTensor::fromVector<uint32_t>({3}, {5u, static_cast<uint32_t>(-5), 0xFFFFFFFFu});
  EXPECT_EQ(runForward(incrementMod(3, 4), {u})[0].toVector<uint32_t>(),
            (std::vector<uint32_t>{0u, 2u, 2u}));
}

TEST(IncrementModOp, RefusesBadModuliAndTypes) {
  auto f = randomTensor({2}, 1);
  expectError([&] { runForward(incrementMod(1, 0), {f}); }, {"IncrementMod", "modulus"});
  auto i = HostTensor::fromVector<int32_t>({2}, {1, 2});
  expectError([&] { runForward(incrementMod(0.5f, 4), {i}); },
              {"IncrementMod", "increment = 0.5", "whole numbers"});
  auto l = HostTensor::fromVector<int64_t>({2}, {1, 2});
  expectError([&] { runForward(incrementMod(1, 4), {l}); }, {"IncrementMod", "INT64[2]", "UINT32"});
}

}  // namespace
}  // namespace xtrain::testing
