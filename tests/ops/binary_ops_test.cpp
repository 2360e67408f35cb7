#include <gtest/gtest.h>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

TEST(BinaryOps, AddBroadcastsLikeNumpy) {
  auto a = HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = HostTensor::fromVector<float>({3}, {10, 20, 30});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Add", in); }, {a, b});
  EXPECT_TRUE(allClose(out[0], HostTensor::fromVector<float>({2, 3}, {11, 22, 33, 14, 25, 36})));
}

TEST(BinaryOps, DivAndSubBroadcastColumn) {
  auto a = HostTensor::fromVector<float>({2, 2}, {2, 4, 6, 8});
  auto b = HostTensor::fromVector<float>({2, 1}, {2, 4});
  auto d = runForward([](ir::Graph& g, auto in) { return addOp(g, "Div", in); }, {a, b});
  EXPECT_TRUE(allClose(d[0], HostTensor::fromVector<float>({2, 2}, {1, 2, 1.5, 2})));
  auto s = runForward([](ir::Graph& g, auto in) { return addOp(g, "Sub", in); }, {a, b});
  EXPECT_TRUE(allClose(s[0], HostTensor::fromVector<float>({2, 2}, {0, 2, 2, 4})));
}

TEST(BinaryOps, IncompatibleShapesNameTheOp) {
  auto a = HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = HostTensor::fromVector<float>({2}, {1, 2});
  try {
    runForward([](ir::Graph& g, auto in) { return addOp(g, "Mul", in); }, {a, b});
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("Mul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,3]"), std::string::npos) << e.what();
  }
}

class BinaryGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(BinaryGrad, MatchesFiniteDifferencesWithBroadcasting) {
  const std::string type = GetParam();
  auto a = randomTensor({3, 4}, 1, 0.5f, 1.5f);
  auto b = randomTensor({4}, 2, 0.5f, 1.5f);
  auto c = randomTensor({3, 1}, 3, 0.5f, 1.5f);
  expectGradientsMatch([&](ir::Graph& g, auto in) { return addOp(g, type, {in[0], in[1]}); },
                       {a, b});
  expectGradientsMatch([&](ir::Graph& g, auto in) { return addOp(g, type, {in[0], in[1]}); },
                       {c, a});
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryGrad, ::testing::Values("Add", "Sub", "Mul", "Div"));

TEST(BinaryOps, SumOfThreeWithGradient) {
  auto a = randomTensor({2, 3}, 4);
  auto b = randomTensor({3}, 5);
  auto c = randomTensor({2, 1}, 6);
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Sum", in); }, {a, b, c});
  for (int64_t i = 0; i < 6; ++i) {
    const float want = a.span<float>()[i] + b.span<float>()[i % 3] + c.span<float>()[i / 3];
    EXPECT_NEAR(out[0].span<float>()[i], want, 1e-6);
  }
  expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "Sum", in); }, {a, b, c});
}

}  // namespace
}  // namespace xtrain::testing
