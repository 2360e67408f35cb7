// NegativeLogLikelihoodLoss (ai.onnx opsets 12/13): forward against a double-precision reference
// ([N, C] and [N, C, D1, D2], weights, ignore_index, each reduction), gradients against finite
// differences, errors.
#include <gtest/gtest.h>

#include <optional>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// input [N, C, S...] (log-probabilities), target [N, S...], weight [C] or null.
HostTensor refNll(const HostTensor& x, const HostTensor& target, const HostTensor* weight,
                  const std::string& reduction, std::optional<int64_t> ignore) {
  const Shape& sh = x.shape();
  const int64_t n = sh[0], c = sh[1];
  int64_t s = 1;
  for (size_t d = 2; d < sh.size(); ++d) s *= sh[d];
  HostTensor loss(TensorInfo(DataType::FLOAT, reduction == "none" ? target.shape() : Shape{}));
  double total = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < s; ++k) {
      const auto t = static_cast<int64_t>(target.getAsDouble(i * s + k));
      double l = 0, w = 0;
      if (!ignore || t != *ignore) {
        w = weight != nullptr ? weight->getAsDouble(t) : 1.0;
        l = -w * x.getAsDouble((i * c + t) * s + k);
      }
      if (reduction == "none") loss.setFromDouble(i * s + k, l);
      total += l;
      wsum += w;
    }
  }
  if (reduction == "sum") loss.setFromDouble(0, total);
  if (reduction == "mean") loss.setFromDouble(0, wsum != 0 ? total / wsum : 0.0);
  return loss;
}

BuildFn nll(const std::string& reduction, std::optional<int64_t> ignore, int opset = 13,
            bool setReduction = true) {
  Attributes a;
  if (setReduction) a.set("reduction", reduction);
  if (ignore) a.set("ignore_index", *ignore);
  return [a, opset](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "NegativeLogLikelihoodLoss", in, a, 1, ir::kOnnxDomain, opset);
  };
}

class NllReductions : public ::testing::TestWithParam<std::string> {};

TEST_P(NllReductions, TwoDimensionalMatchesReference) {
  const std::string red = GetParam();
  auto x = randomTensor({5, 4}, 1, -3.0f, 0.0f);
  auto y = HostTensor::fromVector<int64_t>({5}, {0, 3, 2, 2, 1});
  for (int opset : {12, 13}) {
    auto out = runForward(nll(red, std::nullopt, opset), {x, y});
    EXPECT_TRUE(allClose(out[0], refNll(x, y, nullptr, red, std::nullopt), 1e-6, 1e-6)) << opset;
  }
}

TEST_P(NllReductions, SpatialWithWeightsAndIgnoreIndexMatchesReference) {
  const std::string red = GetParam();
  auto x = randomTensor({2, 3, 2, 3}, 2, -3.0f, 0.0f);
  auto y = HostTensor::fromVector<int32_t>({2, 2, 3}, {0, 1, 2, -100, 2, 1, 1, 0, -100, 2, 2, 0});
  auto w = randomTensor({3}, 3, 0.5f, 2.0f);
  auto out = runForward(nll(red, -100), {x, y, w});
  EXPECT_TRUE(allClose(out[0], refNll(x, y, &w, red, -100), 1e-5, 1e-6));
  // Without weights, "mean" divides by the number of non-ignored targets.
  auto unweighted = runForward(nll(red, -100), {x, y});
  EXPECT_TRUE(allClose(unweighted[0], refNll(x, y, nullptr, red, -100), 1e-5, 1e-6));
  // An ignore_index inside [0, C) ignores that class.
  auto ignoreOne = runForward(
      nll(red, 2),
      {x, HostTensor::fromVector<int64_t>({2, 2, 3}, {0, 1, 2, 0, 2, 1, 1, 0, 1, 2, 2, 0})});
  EXPECT_TRUE(allClose(
      ignoreOne[0],
      refNll(x, HostTensor::fromVector<int64_t>({2, 2, 3}, {0, 1, 2, 0, 2, 1, 1, 0, 1, 2, 2, 0}),
             nullptr, red, 2),
      1e-5, 1e-6));
}

TEST_P(NllReductions, GradientsMatchFiniteDifferences) {
  const std::string red = GetParam();
  GradCheckOptions o;
  o.atol = 3e-4;
  o.wrt = {0};
  auto x = randomTensor({3, 4}, 4, -2.0f, 0.0f);
  auto y = HostTensor::fromVector<int64_t>({3}, {1, 3, 0});
  expectGradientsMatch(nll(red, std::nullopt), {x, y}, o);
  auto xs = randomTensor({2, 3, 2, 2}, 5, -2.0f, 0.0f);
  auto ys = HostTensor::fromVector<int32_t>({2, 2, 2}, {2, 5, 5, 1, 0, 0, 1, 2});
  auto w = randomTensor({3}, 6, 0.5f, 2.0f);
  expectGradientsMatch(nll(red, 5), {xs, ys, w}, o);
  expectGradientsMatch(nll(red, 5), {xs, ys}, o);
}

INSTANTIATE_TEST_SUITE_P(Nll, NllReductions, ::testing::Values("mean", "sum", "none"));

TEST(OnnxNll, DefaultReductionIsMeanAndAllIgnoredIsZero) {
  auto x = randomTensor({3, 2}, 7, -2.0f, 0.0f);
  auto y = HostTensor::fromVector<int64_t>({3}, {1, 0, 1});
  auto out = runForward(nll("", std::nullopt, 13, false), {x, y});
  EXPECT_EQ(out[0].shape(), Shape{});
  EXPECT_TRUE(allClose(out[0], refNll(x, y, nullptr, "mean", std::nullopt), 1e-6, 1e-6));
  auto ignored = HostTensor::fromVector<int64_t>({3}, {-1, -1, -1});
  auto zero = runForward(nll("mean", -1), {x, ignored});
  EXPECT_EQ(zero[0].toVector<float>(), std::vector<float>{0.0f});
  // Its gradient is 0 too.
  auto grads = runForward(
      [](ir::Graph& g, auto in) {
        auto dl = HostTensor::scalar(1.0f);
        g.addTensor("dl", dl.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(dl));
        Attributes a;
        a.set("reduction", std::string("mean"));
        a.set("ignore_index", int64_t{-1});
        return addOp(g, "NegativeLogLikelihoodLossGrad", {"dl", in[0], in[1]}, a, 1,
                     ir::kXtrainDomain, 0);
      },
      {x, ignored});
  EXPECT_EQ(grads[0].toVector<float>(), std::vector<float>(6, 0.0f));
}

TEST(OnnxNll, ErrorsNameTheOp) {
  auto x = randomTensor({3, 4}, 8);
  expectError(
      [&] {
        runForward(nll("mean", std::nullopt), {x, HostTensor::fromVector<int64_t>({3}, {0, 4, 1})});
      },
      {"NegativeLogLikelihoodLoss", "label 4", "[0, 4)"});
  expectError(
      [&] {
        runForward(nll("mean", -1), {x, HostTensor::fromVector<int64_t>({3}, {0, -2, 1})});
      },
      {"NegativeLogLikelihoodLoss", "label -2", "ignore index -1"});
  expectError(
      [&] {
        runForward(nll("mean", std::nullopt),
                   {x, HostTensor::fromVector<int64_t>({4}, {0, 1, 1, 1})});
      },
      {"NegativeLogLikelihoodLoss", "target INT64[4]", "input FLOAT[3,4]", "[3]"});
  expectError(
      [&] {
        runForward(nll("mean", std::nullopt),
                   {x, HostTensor::fromVector<int64_t>({3}, {0, 1, 1}), randomTensor({3}, 9)});
      },
      {"NegativeLogLikelihoodLoss", "weight", "FLOAT[3]", "FLOAT[4]"});
  expectError(
      [&] {
        runForward(nll("mean", std::nullopt), {x, randomTensor({3}, 10)});
      },
      {"NegativeLogLikelihoodLoss", "target", "INT32 or INT64"});
  expectError(
      [&] {
        runForward(nll("average", std::nullopt),
                   {x, HostTensor::fromVector<int64_t>({3}, {0, 1, 1})});
      },
      {"NegativeLogLikelihoodLoss", "average"});
  expectError(
      [&] {
        runForward(nll("mean", std::nullopt),
                   {randomTensor({3}, 11), HostTensor::fromVector<int64_t>({3}, {0, 1, 1})});
      },
      {"NegativeLogLikelihoodLoss", "input", "[N, C]"});
}

}  // namespace
}  // namespace xtrain::testing

namespace xtrain::testing {
namespace {

TEST(OnnxNll, Float16RunsPromoted) {
  auto xf = randomTensor({4, 3}, 12, -2.0f, 0.0f);
  auto wf = randomTensor({3}, 13, 0.5f, 2.0f);
  HostTensor x(TensorInfo(DataType::FLOAT16, xf.shape()));
  HostTensor w(TensorInfo(DataType::FLOAT16, wf.shape()));
  for (int64_t i = 0; i < x.nelms(); ++i) x.setFromDouble(i, xf.getAsDouble(i));
  for (int64_t i = 0; i < w.nelms(); ++i) w.setFromDouble(i, wf.getAsDouble(i));
  auto y = HostTensor::fromVector<int64_t>({4}, {2, 0, 1, 2});
  auto out = runForward(nll("mean", std::nullopt), {x, y, w});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  EXPECT_NEAR(out[0].getAsDouble(0), refNll(x, y, &w, "mean", std::nullopt).getAsDouble(0), 2e-3);
}

}  // namespace
}  // namespace xtrain::testing
