// InstanceNormalization (ai.onnx) and GroupNormalization (ai.graphcore): forward against a
// double-precision reference, gradients (X, scale, bias, and through mean/invStdDev) against finite
// differences, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

struct NormRef {
  HostTensor y, mean, inv;
};

// strided: group g holds channels g, g + groups, ... (SessionOptions.groupNormStridedChannelGrouping).
NormRef refGroupNorm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                     int64_t groups, double eps, bool strided = false) {
  const Shape& sh = x.shape();
  const int64_t n = sh[0], c = sh[1];
  int64_t s = 1;
  for (size_t d = 2; d < sh.size(); ++d) s *= sh[d];
  const int64_t cpg = c / groups;
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(groups));
  for (int64_t ch = 0; ch < c; ++ch) {
    members[static_cast<size_t>(strided ? ch % groups : ch / cpg)].push_back(ch);
  }
  NormRef r{HostTensor(x.info()), HostTensor(TensorInfo(DataType::FLOAT, {n * groups})),
            HostTensor(TensorInfo(DataType::FLOAT, {n * groups}))};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t g = 0; g < groups; ++g) {
      double sum = 0, sq = 0;
      for (int64_t ch : members[static_cast<size_t>(g)]) {
        for (int64_t k = 0; k < s; ++k) sum += x.getAsDouble((i * c + ch) * s + k);
      }
      const double mean = sum / static_cast<double>(cpg * s);
      for (int64_t ch : members[static_cast<size_t>(g)]) {
        for (int64_t k = 0; k < s; ++k) {
          const double d = x.getAsDouble((i * c + ch) * s + k) - mean;
          sq += d * d;
        }
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(cpg * s) + eps);
      r.mean.setFromDouble(i * groups + g, mean);
      r.inv.setFromDouble(i * groups + g, inv);
      for (int64_t ch : members[static_cast<size_t>(g)]) {
        for (int64_t k = 0; k < s; ++k) {
          const int64_t at = (i * c + ch) * s + k;
          r.y.setFromDouble(
              at, (x.getAsDouble(at) - mean) * inv * scale.getAsDouble(ch) + bias.getAsDouble(ch));
        }
      }
    }
  }
  return r;
}

Attributes groupAttrs(int64_t groups, float eps = 1e-5f) {
  return attrs({{"num_groups", groups}, {"epsilon", eps}});
}

BuildFn groupNorm(int64_t groups, int numOutputs = 3) {
  return [groups, numOutputs](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "GroupNormalization", in, groupAttrs(groups), numOutputs, ir::kGraphcoreDomain,
                 1);
  };
}

TEST(InstanceNormOp, MatchesReferenceAtEveryOpset) {
  auto x = randomTensor({2, 3, 4, 5}, 1, -2.0f, 3.0f);
  auto scale = randomTensor({3}, 2, 0.5f, 1.5f);
  auto bias = randomTensor({3}, 3);
  for (int opset : {7, 13, 17}) {
    auto out = runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "InstanceNormalization", in, attrs({{"epsilon", 1e-3f}}), 1,
                       ir::kOnnxDomain, opset);
        },
        {x, scale, bias});
    EXPECT_TRUE(allClose(out[0], refGroupNorm(x, scale, bias, 3, 1e-3).y, 1e-5, 1e-5)) << opset;
  }
  // Default epsilon 1e-5, rank 3.
  auto x3 = randomTensor({2, 2, 7}, 4);
  auto s2 = randomTensor({2}, 5), b2 = randomTensor({2}, 6);
  auto out = runForward(
      [&](ir::Graph& g, auto in) { return addOp(g, "InstanceNormalization", in); }, {x3, s2, b2});
  EXPECT_TRUE(allClose(out[0], refGroupNorm(x3, s2, b2, 2, 1e-5).y, 1e-5, 1e-5));
}

TEST(InstanceNormOp, GradientsMatchFiniteDifferences) {
  auto x = randomTensor({2, 3, 5}, 7, -2.0f, 2.0f);
  auto scale = randomTensor({3}, 8, 0.5f, 1.5f);
  auto bias = randomTensor({3}, 9);
  expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "InstanceNormalization", in); },
                       {x, scale, bias});
}

TEST(GroupNormOp, MatchesReferenceWithStatistics) {
  auto x = randomTensor({3, 6, 2, 3}, 10, -1.0f, 2.0f);
  auto scale = randomTensor({6}, 11, 0.5f, 1.5f);
  auto bias = randomTensor({6}, 12);
  for (int64_t groups : {1, 2, 3, 6}) {
    auto out = runForward(groupNorm(groups), {x, scale, bias});
    auto ref = refGroupNorm(x, scale, bias, groups, 1e-5);
    EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5)) << groups;
    EXPECT_EQ(out[1].shape(), (Shape{3 * groups}));
    EXPECT_TRUE(allClose(out[1], ref.mean, 1e-5, 1e-6)) << groups;
    EXPECT_TRUE(allClose(out[2], ref.inv, 1e-5, 1e-5)) << groups;
  }
  // Rank 2 (no spatial dimensions), default epsilon, only Y.
  auto x2 = randomTensor({4, 6}, 13);
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "GroupNormalization", in, attrs({{"num_groups", int64_t{2}}}), 1,
                     ir::kGraphcoreDomain, 1);
      },
      {x2, scale, bias});
  EXPECT_TRUE(allClose(out[0], refGroupNorm(x2, scale, bias, 2, 1e-5).y, 1e-5, 1e-5));
}

TEST(GroupNormOp, LargeInputMatchesReference) {
  auto x = randomTensor({2, 32, 17, 19}, 14, -3.0f, 5.0f);
  auto scale = randomTensor({32}, 15, 0.5f, 1.5f);
  auto bias = randomTensor({32}, 16);
  auto out = runForward(groupNorm(8), {x, scale, bias});
  auto ref = refGroupNorm(x, scale, bias, 8, 1e-5);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-4, 1e-5));
  EXPECT_TRUE(allClose(out[2], ref.inv, 1e-5, 1e-5));
}

TEST(GroupNormOp, GradientsMatchFiniteDifferences) {
  auto x = randomTensor({2, 4, 3}, 17, -2.0f, 2.0f);
  auto scale = randomTensor({4}, 18, 0.5f, 1.5f);
  auto bias = randomTensor({4}, 19);
  for (int64_t groups : {1, 2, 4}) {
    SCOPED_TRACE(groups);
    // Y only (statistics recomputed in the gradient), and Y with mean/invStdDev also
    // differentiated (saved statistics, gradients arriving at them).
    expectGradientsMatch(groupNorm(groups, 1), {x, scale, bias});
    expectGradientsMatch(groupNorm(groups, 3), {x, scale, bias});
  }
}

// Strided channel grouping (attribute strided_channel_grouping = 1): forward and statistics
// against the reference, gradients against finite differences.
TEST(GroupNormOp, StridedChannelGrouping) {
  auto x = randomTensor({2, 6, 2, 3}, 40, -1.0f, 2.0f);
  auto scale = randomTensor({6}, 41, 0.5f, 1.5f);
  auto bias = randomTensor({6}, 42);
  auto strided = [](int64_t groups, int numOutputs) -> BuildFn {
    return [groups, numOutputs](ir::Graph& g, const std::vector<TensorId>& in) {
      Attributes a = groupAttrs(groups);
      a.set("strided_channel_grouping", int64_t{1});
      return addOp(g, "GroupNormalization", in, a, numOutputs, ir::kGraphcoreDomain, 1);
    };
  };
  for (int64_t groups : {2, 3}) {
    SCOPED_TRACE(groups);
    auto out = runForward(strided(groups, 3), {x, scale, bias});
    auto ref = refGroupNorm(x, scale, bias, groups, 1e-5, true);
    EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
    EXPECT_TRUE(allClose(out[1], ref.mean, 1e-5, 1e-6));
    EXPECT_TRUE(allClose(out[2], ref.inv, 1e-5, 1e-5));
    EXPECT_FALSE(allClose(out[0], refGroupNorm(x, scale, bias, groups, 1e-5).y, 1e-3, 1e-3));
    auto xs = randomTensor({2, 6, 3}, 43, -2.0f, 2.0f);
    expectGradientsMatch(strided(groups, 1), {xs, scale, bias});
    expectGradientsMatch(strided(groups, 3), {xs, scale, bias});
  }
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              Attributes a = groupAttrs(2);
              a.set("strided_channel_grouping", int64_t{2});
              return addOp(g, "GroupNormalization", in, a, 1, ir::kGraphcoreDomain, 1);
            },
            {x, scale, bias});
      },
      {"GroupNormalization", "strided_channel_grouping is 2"});
}

TEST(GroupNormOp, ErrorsNameTheOp) {
  auto x = randomTensor({2, 6, 3}, 20);
  auto s = randomTensor({6}, 21), b = randomTensor({6}, 22);
  expectError(
      [&] {
        runForward(groupNorm(4), {x, s, b});
      },
      {"GroupNormalization", "num_groups is 4", "6 channels"});
  expectError(
      [&] {
        runForward(groupNorm(0), {x, s, b});
      },
      {"GroupNormalization", "num_groups is 0"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "GroupNormalization", in, {}, 1, ir::kGraphcoreDomain, 1);
            },
            {x, s, b});
      },
      {"GroupNormalization", "num_groups is required"});
  expectError(
      [&] {
        runForward(groupNorm(2), {x, randomTensor({3}, 23), b});
      },
      {"GroupNormalization", "scale is FLOAT[3]", "FLOAT[6]"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "InstanceNormalization", in); },
                   {randomTensor({2, 6}, 24), s, b});
      },
      {"InstanceNormalization", "rank >= 3"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "InstanceNormalization", in); },
                   {x, s, randomTensor({5}, 25)});
      },
      {"InstanceNormalization", "B is FLOAT[5]"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "InstanceNormalization", in, attrs({{"epsilon", -1.0f}}));
            },
            {x, s, b});
      },
      {"InstanceNormalization", "epsilon is -1"});
}

}  // namespace
}  // namespace xtrain::testing

namespace xtrain::testing {
namespace {

// A FLOAT tensor's values as FLOAT16 (setFromDouble rounds).
HostTensor toHalf(const HostTensor& t) {
  HostTensor h(TensorInfo(DataType::FLOAT16, t.shape()));
  for (int64_t i = 0; i < t.nelms(); ++i) h.setFromDouble(i, t.getAsDouble(i));
  return h;
}

// FLOAT16 runs promoted: the FLOAT16 result is the FLOAT one rounded.
TEST(GroupNormOp, Float16RunsPromoted) {
  auto x = toHalf(randomTensor({2, 4, 6}, 30));
  auto s = toHalf(randomTensor({4}, 31, 0.5f, 1.5f));
  auto b = toHalf(randomTensor({4}, 32));
  auto out = runForward(groupNorm(2, 1), {x, s, b});
  auto inst = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "InstanceNormalization", in); }, {x, s, b});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  ASSERT_EQ(inst[0].dataType(), DataType::FLOAT16);
  auto ref = refGroupNorm(x, s, b, 2, 1e-5);
  auto refInst = refGroupNorm(x, s, b, 4, 1e-5);
  for (int64_t i = 0; i < x.nelms(); ++i) {
    EXPECT_NEAR(out[0].getAsDouble(i), ref.y.getAsDouble(i), 4e-3) << i;
    EXPECT_NEAR(inst[0].getAsDouble(i), refInst.y.getAsDouble(i), 4e-3) << i;
  }
}

}  // namespace
}  // namespace xtrain::testing
