// Ops PopART's operator tests use that xtrain lacked: ai.onnx ReduceLogSum, IsNaN, IsInf and
// GlobalMaxPool against plain-loop references (gradients against finite differences), and PopART's
// ai.graphcore Reshape and BatchNormalization against the ai.onnx ops they are forms of.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/error_testing.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Attributes reduceAttrs(const std::vector<int64_t>& axes, int64_t keepdims) {
  Attributes a;
  if (!axes.empty()) a.set("axes", axes);
  a.set("keepdims", keepdims);
  return a;
}

TEST(ReduceLogSum, EveryAxisSubsetMatchesLogOfSum) {
  const auto x = randomTensor({2, 3, 4}, 31, 0.1f, 2.0f);
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < 3; ++d) {
      if (mask & (1 << d)) axes.push_back(d);
    }
    for (int64_t keep : {0, 1}) {
      const auto out = runForward(
          [&](ir::Graph& g, auto in) {
            return addOp(g, "ReduceLogSum", in, reduceAttrs(axes, keep), 1, ir::kOnnxDomain, 11);
          },
          {x});
      // Plain loops: sums over the reduced axes (all of them when axes is empty), in double.
      const std::vector<int64_t> all = axes.empty() ? std::vector<int64_t>{0, 1, 2} : axes;
      Shape kept = x.shape(), os;
      for (int64_t a : all) kept[static_cast<size_t>(a)] = 1;
      for (size_t d = 0; d < 3; ++d) {
        const bool red = kept[d] == 1 && x.shape()[d] != 1;
        if (!red) os.push_back(x.shape()[d]);
        if (red && keep) os.push_back(1);
      }
      std::vector<double> sums(static_cast<size_t>(shapeNelms(kept)), 0.0);
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 3; ++j) {
          for (int64_t k = 0; k < 4; ++k) {
            const int64_t o = (kept[0] == 1 ? 0 : i) * kept[1] * kept[2] +
                              (kept[1] == 1 ? 0 : j) * kept[2] + (kept[2] == 1 ? 0 : k);
            sums[static_cast<size_t>(o)] += x.getAsDouble((i * 3 + j) * 4 + k);
          }
        }
      }
      HostTensor want(TensorInfo(DataType::FLOAT, os));
      for (size_t o = 0; o < sums.size(); ++o) {
        want.setFromDouble(static_cast<int64_t>(o), std::log(sums[o]));
      }
      EXPECT_TRUE(allClose(out[0], want, 1e-5, 1e-6))
          << "axes " << shapeToString(axes) << " keepdims " << keep;
    }
  }
}

TEST(ReduceLogSum, GradientsMatchFiniteDifferences) {
  const auto x = randomTensor({3, 4, 5}, 32, 0.5f, 1.5f);
  for (const std::vector<int64_t>& axes :
       {std::vector<int64_t>{1}, std::vector<int64_t>{0, 2}, std::vector<int64_t>{}}) {
    for (int64_t keep : {0, 1}) {
      SCOPED_TRACE("axes " + shapeToString(axes) + " keepdims " + std::to_string(keep));
      expectGradientsMatch(
          [&](ir::Graph& g, auto in) {
            return addOp(g, "ReduceLogSum", in, reduceAttrs(axes, keep));
          },
          {x});
    }
  }
}

TEST(IsNaNIsInf, ClassifyEveryKindOfValueInFloatAndFloat16) {
  const std::vector<float> v = {kInf, -kInf, 3.5f, kNaN, 0.0f, -1.0f};
  HostTensor x(TensorInfo(DataType::FLOAT, {2, 3}));
  for (size_t i = 0; i < v.size(); ++i) x.span<float>()[i] = v[i];
  struct Case {
    const char* type;
    int64_t neg, pos;
  };
  for (const Case& c :
       {Case{"IsNaN", 1, 1}, Case{"IsInf", 1, 1}, Case{"IsInf", 0, 1}, Case{"IsInf", 1, 0}}) {
    for (DataType t : {DataType::FLOAT, DataType::FLOAT16}) {
      Attributes a;
      if (std::string(c.type) == "IsInf") {
        a.set("detect_negative", c.neg);
        a.set("detect_positive", c.pos);
      }
      const auto out =
          runForward([&](ir::Graph& g, auto in) { return addOp(g, c.type, in, a); }, {x.castTo(t)});
      ASSERT_EQ(out[0].dataType(), DataType::BOOL);
      ASSERT_EQ(out[0].shape(), x.shape());
      for (size_t i = 0; i < v.size(); ++i) {
        const bool want = std::string(c.type) == "IsNaN"
                              ? std::isnan(v[i])
                              : std::isinf(v[i]) && (v[i] < 0 ? c.neg != 0 : c.pos != 0);
        EXPECT_EQ(out[0].getAsDouble(static_cast<int64_t>(i)) != 0, want)
            << c.type << " " << c.neg << c.pos << " element " << i;
      }
    }
  }
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "IsNaN", in); },
                   {x.castTo(DataType::INT32)});
      },
      {"IsNaN", "INT32"});
}

TEST(GlobalMaxPool, MatchesPlaneMaximaAndGradients) {
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{1, 2, 7}, Shape{2, 1, 2, 3, 2}}) {
    const auto x = randomTensor(s, 33);
    const auto out =
        runForward([](ir::Graph& g, auto in) { return addOp(g, "GlobalMaxPool", in); }, {x});
    Shape os(s.size(), 1);
    os[0] = s[0];
    os[1] = s[1];
    const int64_t planes = s[0] * s[1], size = x.nelms() / planes;
    HostTensor want(TensorInfo(DataType::FLOAT, os));
    for (int64_t p = 0; p < planes; ++p) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < size; ++i) m = std::max(m, x.getAsDouble(p * size + i));
      want.setFromDouble(p, m);
    }
    EXPECT_TRUE(allClose(out[0], want, 0, 0)) << shapeToString(s);
    // Distinct values: the maximum is differentiable.
    expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "GlobalMaxPool", in); }, {x});
  }
  HostTensor nan = randomTensor({1, 1, 2, 2}, 34);
  nan.span<float>()[2] = kNaN;
  const auto out =
      runForward([](ir::Graph& g, auto in) { return addOp(g, "GlobalMaxPool", in); }, {nan});
  EXPECT_TRUE(std::isnan(out[0].getAsDouble(0)));
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "GlobalMaxPool", in); },
                   {randomTensor({2, 3}, 35)});
      },
      {"GlobalMaxPool", "[N, C, spatial...]"});
}

TEST(GraphcoreReshape, IsOnnxReshapeWithTheShapeAnAttribute) {
  const auto x = randomTensor({2, 4, 3}, 36);
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{4, 6}, std::vector<int64_t>{-1, 6}, std::vector<int64_t>{-1, 0}}) {
    const auto out = runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Reshape", in, attrs({{"shape", shape}}), 1, ir::kGraphcoreDomain, 1);
        },
        {x});
    const Shape want = shape[1] == 0 ? Shape{6, 4} : Shape{4, 6};
    ASSERT_EQ(out[0].shape(), want) << shapeToString(shape);
    for (int64_t i = 0; i < x.nelms(); ++i) EXPECT_EQ(out[0].getAsDouble(i), x.getAsDouble(i));
    expectGradientsMatch(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Reshape", in, attrs({{"shape", shape}}), 1, ir::kGraphcoreDomain, 1);
        },
        {x});
  }
  expectError(
      [&] {
        runForward([](ir::Graph& g,
                      auto in) { return addOp(g, "Reshape", in, {}, 1, ir::kGraphcoreDomain, 1); },
                   {x});
      },
      {"Reshape", "shape"});
}

TEST(GraphcoreBatchNorm, IsOnnxBatchNorm9WithTheUnbiasedRunningVariance) {
  const auto x = randomTensor({4, 3, 2, 2}, 37);
  const auto scale = randomTensor({3}, 38, 0.5f, 1.5f);
  const auto bias = randomTensor({3}, 39);
  const auto mean = randomTensor({3}, 40);
  const auto var = randomTensor({3}, 41, 0.5f, 1.5f);
  const std::vector<HostTensor> in = {x, scale, bias, mean, var};
  const Attributes a = attrs({{"epsilon", 1e-3f}, {"momentum", 0.8f}});
  for (int outputs : {1, 5}) {
    const auto got = runForward(
        [&](ir::Graph& g, auto ins) {
          return addOp(g, "BatchNormalization", ins, a, outputs, ir::kGraphcoreDomain, 1);
        },
        in);
    Attributes onnx = a;
    onnx.set("running_variance", std::string("unbiased"));
    const auto want = runForward(
        [&](ir::Graph& g, auto ins) {
          return addOp(g, "BatchNormalization", ins, onnx, outputs, ir::kOnnxDomain, 9);
        },
        in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(allClose(got[i], want[i], 0, 0)) << outputs << " outputs, output " << i;
    }
  }
  // The running variance is the unbiased one: momentum * var + (1 - momentum) * s2 * M / (M - 1).
  const auto out = runForward(
      [&](ir::Graph& g, auto ins) {
        return addOp(g, "BatchNormalization", ins, a, 5, ir::kGraphcoreDomain, 1);
      },
      in);
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, s2 = 0;
    for (int64_t n = 0; n < 4; ++n) {
      for (int64_t k = 0; k < 4; ++k) s += x.getAsDouble((n * 3 + c) * 4 + k);
    }
    const double m = s / 16;
    for (int64_t n = 0; n < 4; ++n) {
      for (int64_t k = 0; k < 4; ++k) {
        const double d = x.getAsDouble((n * 3 + c) * 4 + k) - m;
        s2 += d * d;
      }
    }
    const double want = 0.8 * var.getAsDouble(c) + 0.2 * s2 / 15;
    EXPECT_NEAR(out[2].getAsDouble(c), want, 1e-5) << "channel " << c;
  }
}

TEST(BatchNormMixedTypes, Float16XWithFloatStatistics) {
  // PopART allows FLOAT statistics (here the variance) for FLOAT16 activations; the statistics
  // outputs take their inputs' types, and the values are those of an all-FLOAT op, rounded.
  const auto x = randomTensor({2, 3, 2, 2}, 42);
  const auto scale = randomTensor({3}, 43, 0.5f, 1.5f);
  const auto bias = randomTensor({3}, 44);
  const auto mean = randomTensor({3}, 45);
  const auto var = randomTensor({3}, 46, 0.5f, 1.5f);
  auto half = [](const HostTensor& t) {
    return t.castTo(DataType::FLOAT16).castTo(DataType::FLOAT);
  };
  const Attributes a = attrs({{"epsilon", 1e-3f}, {"momentum", 0.8f}});
  auto build = [&](ir::Graph& g, auto ins) {
    return addOp(g, "BatchNormalization", ins, a, 3, ir::kOnnxDomain, 9);
  };
  const auto got =
      runForward(build, {x.castTo(DataType::FLOAT16), scale.castTo(DataType::FLOAT16),
                         bias.castTo(DataType::FLOAT16), mean.castTo(DataType::FLOAT16), var});
  const auto want = runForward(build, {half(x), half(scale), half(bias), half(mean), var});
  EXPECT_EQ(got[0].dataType(), DataType::FLOAT16);
  EXPECT_EQ(got[1].dataType(), DataType::FLOAT16);
  EXPECT_EQ(got[2].dataType(), DataType::FLOAT);
  EXPECT_TRUE(allClose(got[0].castTo(DataType::FLOAT),
                       want[0].castTo(DataType::FLOAT16).castTo(DataType::FLOAT), 0, 0));
  EXPECT_TRUE(allClose(got[2], want[2], 1e-6, 1e-6));
  expectError(
      [&] {
        runForward(build, {x, scale, bias, mean, var.castTo(DataType::FLOAT16)});
      },
      {"BatchNormalization", "input_var is FLOAT16[3]"});
}

}  // namespace
}  // namespace xtrain::testing
