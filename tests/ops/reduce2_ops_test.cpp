// ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSumExp, ReduceSumSquare: every
// axis subset against a double-precision reference, opset forms, gradients (ties, zeros), errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

const std::vector<std::string> kTypes = {"ReduceMax",      "ReduceMin", "ReduceProd",
                                         "ReduceL1",       "ReduceL2",  "ReduceLogSumExp",
                                         "ReduceSumSquare"};

Attributes reduceAttrs(const std::vector<int64_t>& axes, int64_t keepdims) {
  Attributes a;
  if (!axes.empty()) a.set("axes", axes);
  a.set("keepdims", keepdims);
  return a;
}

// The reduction of `type` over `axes` (empty: all) with plain loops, in double.
HostTensor reduceRef(const std::string& type, const HostTensor& x, const std::vector<int64_t>& axes,
                     bool keepdims) {
  const Shape& s = x.shape();
  const auto rank = static_cast<int64_t>(s.size());
  std::vector<bool> red(s.size(), axes.empty());
  for (auto a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  Shape os, keptShape;
  for (size_t d = 0; d < s.size(); ++d) {
    keptShape.push_back(red[d] ? 1 : s[d]);
    if (!red[d]) {
      os.push_back(s[d]);
    } else if (keepdims) {
      os.push_back(1);
    }
  }
  const auto outN = static_cast<size_t>(shapeNelms(keptShape));
  std::vector<std::vector<double>> sets(outN);
  for (int64_t i = 0; i < x.nelms(); ++i) {
    int64_t rem = i, o = 0, stride = 1;
    std::vector<int64_t> idx(s.size());
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = rem % s[d];
      rem /= s[d];
    }
    for (size_t d = s.size(); d-- > 0;) {
      o += (red[d] ? 0 : idx[d]) * stride;
      stride *= keptShape[d];
    }
    sets[static_cast<size_t>(o)].push_back(x.getAsDouble(i));
  }
  const double inf = std::numeric_limits<double>::infinity();
  HostTensor y(TensorInfo(x.dataType(), os));
  for (size_t o = 0; o < outN; ++o) {
    double r = 0;
    const auto& v = sets[o];
    if (type == "ReduceMax") {
      r = -inf;
      for (double e : v) r = std::max(r, e);
    } else if (type == "ReduceMin") {
      r = inf;
      for (double e : v) r = std::min(r, e);
    } else if (type == "ReduceProd") {
      r = 1;
      for (double e : v) r *= e;
    } else if (type == "ReduceL1") {
      for (double e : v) r += std::abs(e);
    } else if (type == "ReduceL2") {
      for (double e : v) r += e * e;
      r = std::sqrt(r);
    } else if (type == "ReduceSumSquare") {
      for (double e : v) r += e * e;
    } else {
      for (double e : v) r += std::exp(e);
      r = std::log(r);
    }
    y.setFromDouble(static_cast<int64_t>(o), r);
  }
  return y;
}

TEST(Reduce2Ops, EveryAxisSubsetMatchesReference) {
  auto x = randomTensor({3, 1, 4, 5}, 11, -1.5f, 1.5f);
  for (const auto& type : kTypes) {
    for (int mask = 0; mask < 32; ++mask) {
      std::vector<int64_t> axes;
      for (int64_t d = 0; d < 4; ++d) {
        if (mask & (1 << d)) axes.push_back(mask & 16 ? d - 4 : d);
      }
      for (int64_t keep : {0, 1}) {
        auto out = runForward(
            [&](ir::Graph& g, auto in) {
              return addOp(g, type, in, reduceAttrs(axes, keep), 1, ir::kOnnxDomain, 11);
            },
            {x});
        EXPECT_TRUE(allClose(out[0], reduceRef(type, x, axes, keep != 0), 1e-5, 1e-6))
            << type << " axes " << shapeToString(axes) << " keepdims " << keep;
      }
    }
  }
}

TEST(Reduce2Ops, LargeTensorsBothRowKinds) {
  auto x = randomTensor({7, 33, 65}, 12, -1.0f, 1.0f);
  for (const auto& type : kTypes) {
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{2}, std::vector<int64_t>{0},
                                             std::vector<int64_t>{1}, std::vector<int64_t>{0, 2}}) {
      const bool prod = type == "ReduceProd";
      // Products of many values in [-1, 1) underflow: scale them around 1.
      HostTensor in = x;
      if (prod) {
        for (int64_t i = 0; i < in.nelms(); ++i) in.setFromDouble(i, 1.0 + 0.05 * x.getAsDouble(i));
      }
      auto out = runForward(
          [&](ir::Graph& g, auto i) { return addOp(g, type, i, reduceAttrs(axes, 0)); }, {in});
      EXPECT_TRUE(allClose(out[0], reduceRef(type, in, axes, false), 1e-5, 1e-5))
          << type << " axes " << shapeToString(axes);
    }
  }
}

TEST(Reduce2Ops, AxesAsInputAndNoopFormsAreAccepted) {
  // Opset 18 moves axes to an input; the canonical form accepts it (and noop_with_empty_axes).
  auto x = randomTensor({2, 3, 4}, 13);
  for (const auto& type : kTypes) {
    auto viaInput = runForward(
        [&](ir::Graph& g, auto in) {
          auto v = HostTensor::fromVector<int64_t>({1}, {-1});
          g.addTensor("axes", v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
          return addOp(g, type, {in[0], "axes"}, {}, 1, ir::kOnnxDomain, 17);
        },
        {x});
    EXPECT_TRUE(allClose(viaInput[0], reduceRef(type, x, {2}, true), 1e-5, 1e-6)) << type;
    Attributes noop;
    noop.set("noop_with_empty_axes", int64_t{1});
    auto same = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, type, in, noop, 1, ir::kOnnxDomain, 17); },
        {x});
    // No axes with noop_with_empty_axes: each element is its own set (ONNX's reference gives
    // square(x) for ReduceSumSquare, x for ReduceMax).
    HostTensor each = x;
    for (int64_t i = 0; i < x.nelms(); ++i) {
      HostTensor one = HostTensor::fromVector<float>({1}, {static_cast<float>(x.getAsDouble(i))});
      each.setFromDouble(i, reduceRef(type, one, {}, false).getAsDouble(0));
    }
    EXPECT_TRUE(allClose(same[0], each, 1e-6, 1e-6)) << type;
    // Default: every axis, keepdims 1.
    auto all = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, type, in, {}, 1, ir::kOnnxDomain, 7); }, {x});
    EXPECT_EQ(all[0].shape(), (Shape{1, 1, 1})) << type;
    EXPECT_TRUE(allClose(all[0], reduceRef(type, x, {}, true), 1e-5, 1e-5)) << type;
  }
}

TEST(Reduce2Ops, EmptySetsGiveTheIdentity) {
  HostTensor empty(TensorInfo(DataType::FLOAT, {0, 2}));
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::string, float>> expected = {
      {"ReduceMax", -inf}, {"ReduceMin", inf},        {"ReduceProd", 1},     {"ReduceL1", 0},
      {"ReduceL2", 0},     {"ReduceLogSumExp", -inf}, {"ReduceSumSquare", 0}};
  for (const auto& [type, value] : expected) {
    auto out = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, type, in, reduceAttrs({0}, 0)); }, {empty});
    EXPECT_EQ(out[0].toVector<float>(), (std::vector<float>{value, value})) << type;
  }
}

TEST(Reduce2Ops, MaxMinIntegersAndLogSumExpOfLargeValues) {
  auto xi = HostTensor::fromVector<int64_t>({2, 3}, {5, -7, int64_t{1} << 50, -1, -2, -3});
  auto mx = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMax", in, reduceAttrs({1}, 0)); }, {xi});
  EXPECT_EQ(mx[0].toVector<int64_t>(), (std::vector<int64_t>{int64_t{1} << 50, -1}));
  auto x32 = HostTensor::fromVector<int32_t>({2, 2}, {3, -4, 1, 8});
  auto mn = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMin", in, reduceAttrs({0}, 1)); }, {x32});
  EXPECT_EQ(mn[0].toVector<int32_t>(), (std::vector<int32_t>{1, -4}));
  auto x8 = HostTensor::fromVector<int8_t>({2, 2}, {-128, 5, 127, -3});
  auto mx8 = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMax", in, reduceAttrs({0}, 0)); }, {x8});
  EXPECT_EQ(mx8[0].toVector<int8_t>(), (std::vector<int8_t>{127, 5}));
  auto xu8 = HostTensor::fromVector<uint8_t>({3}, {200, 7, 255});
  auto mnu8 = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMin", in, reduceAttrs({}, 1)); }, {xu8});
  EXPECT_EQ(mnu8[0].toVector<uint8_t>(), (std::vector<uint8_t>{7}));
  const float inf = std::numeric_limits<float>::infinity();
  auto big = HostTensor::fromVector<float>({2, 2}, {1000.0f, 1000.0f, -inf, -inf});
  auto lse = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceLogSumExp", in, reduceAttrs({1}, 0)); },
      {big});
  const auto v = lse[0].toVector<float>();
  EXPECT_NEAR(v.at(0), 1000.0f + std::log(2.0f), 1e-3);
  EXPECT_EQ(v.at(1), -inf);
}

TEST(Reduce2Ops, GradientsMatchFiniteDifferences) {
  // Distinct values away from 0 so that max/min/abs are differentiable at the probe points.
  auto x = randomTensor({3, 4, 5}, 14, 0.2f, 1.2f);
  for (int64_t i = 0; i < x.nelms(); i += 2) x.setFromDouble(i, -x.getAsDouble(i));
  for (const auto& type : kTypes) {
    for (const std::vector<int64_t>& axes :
         {std::vector<int64_t>{1}, std::vector<int64_t>{0, 2}, std::vector<int64_t>{}}) {
      for (int64_t keep : {0, 1}) {
        SCOPED_TRACE(type + " axes " + shapeToString(axes) + " keepdims " + std::to_string(keep));
        expectGradientsMatch(
            [&](ir::Graph& g, auto in) { return addOp(g, type, in, reduceAttrs(axes, keep)); },
            {x});
      }
    }
  }
}

TEST(Reduce2Ops, MaxGradientGoesToTheFirstTie) {
  auto x = HostTensor::fromVector<float>({2, 3}, {1, 3, 3, 2, 2, -1});
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    ir::Graph g;
    // Gradient of sum(reduce(x, axis 1)) through autodiff: 1 at the first extreme of each row.
    auto out = runForward(
        [&](ir::Graph& gr, auto in) {
          auto y = addOp(gr, type, in, reduceAttrs({1}, 1));
          // dx for gy = [10, 20]: ReduceGrad directly.
          auto gy = HostTensor::fromVector<float>({2, 1}, {10, 20});
          gr.addTensor("gy", gy.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(gy));
          Attributes a;
          a.set("axes", std::vector<int64_t>{1});
          a.set("mode", std::string(type) == "ReduceMax" ? std::string("max") : std::string("min"));
          return addOp(gr, "ReduceGrad", {"gy", in[0], y[0]}, a, 1, ir::kXtrainDomain, 0);
        },
        {x});
    const std::vector<float> expected = std::string(type) == "ReduceMax"
                                            ? std::vector<float>{0, 10, 0, 20, 0, 0}
                                            : std::vector<float>{10, 0, 0, 0, 0, 20};
    EXPECT_EQ(out[0].toVector<float>(), expected) << type;
  }
  // The same along axis 0 (kept inner rows).
  auto out = runForward(
      [&](ir::Graph& gr, auto in) {
        auto y = addOp(gr, "ReduceMax", in, reduceAttrs({0}, 0));
        auto gy = HostTensor::fromVector<float>({3}, {1, 2, 3});
        gr.addTensor("gy", gy.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(gy));
        Attributes a;
        a.set("axes", std::vector<int64_t>{0});
        a.set("mode", std::string("max"));
        return addOp(gr, "ReduceGrad", {"gy", in[0], y[0]}, a, 1, ir::kXtrainDomain, 0);
      },
      {HostTensor::fromVector<float>({2, 3}, {1, 3, 3, 2, 3, -1})});
  EXPECT_EQ(out[0].toVector<float>(), (std::vector<float>{0, 2, 3, 1, 0, 0}));
}

TEST(Reduce2Ops, MaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = HostTensor::fromVector<float>({2, 3}, {1, nan, 3, 2, 5, 4});
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    for (int64_t axis : {0, 1}) {
      auto out = runForward(
          [&](ir::Graph& g, auto in) { return addOp(g, type, in, reduceAttrs({axis}, 0)); }, {x});
      const auto v = out[0].toVector<float>();
      EXPECT_TRUE(std::isnan(v.at(axis == 0 ? 1 : 0))) << type << " axis " << axis;
      EXPECT_FALSE(std::isnan(v.at(axis == 0 ? 0 : 1))) << type << " axis " << axis;
    }
  }
  // The gradient goes to the NaN.
  auto dx = runForward(
      [&](ir::Graph& gr, auto in) {
        auto y = addOp(gr, "ReduceMax", in, reduceAttrs({1}, 0));
        auto gy = HostTensor::fromVector<float>({2}, {1, 1});
        gr.addTensor("gy", gy.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(gy));
        Attributes a;
        a.set("axes", std::vector<int64_t>{1});
        a.set("mode", std::string("max"));
        return addOp(gr, "ReduceGrad", {"gy", in[0], y[0]}, a, 1, ir::kXtrainDomain, 0);
      },
      {x});
  EXPECT_EQ(dx[0].toVector<float>(), (std::vector<float>{0, 1, 0, 0, 1, 0}));
}

// d prod / dx_i = product of the others, exact with one or more zeros.
TEST(Reduce2Ops, ProdGradientWithZeros) {
  auto x = HostTensor::fromVector<float>({3, 3}, {2, 0, 3, 0, 0, 5, 2, 3, 4});
  auto out = runForward(
      [&](ir::Graph& gr, auto in) {
        auto y = addOp(gr, "ReduceProd", in, reduceAttrs({1}, 0));
        auto gy = HostTensor::fromVector<float>({3}, {1, 1, 2});
        gr.addTensor("gy", gy.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(gy));
        Attributes a;
        a.set("axes", std::vector<int64_t>{1});
        a.set("mode", std::string("prod"));
        return addOp(gr, "ReduceGrad", {"gy", in[0], y[0]}, a, 1, ir::kXtrainDomain, 0);
      },
      {x});
  EXPECT_EQ(out[0].toVector<float>(), (std::vector<float>{0, 6, 0, 0, 0, 0, 24, 16, 12}));
  // And through autodiff against finite differences with an exact zero in the input.
  auto z = randomTensor({2, 4}, 15, 0.5f, 1.5f);
  z.setFromDouble(1, 0.0);
  expectGradientsMatch(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceProd", in, reduceAttrs({1}, 1)); }, {z});
}

TEST(Reduce2Ops, L2AndLogSumExpGradientsAtTheEdges) {
  // L2 of an all-zero set has gradient 0 (not NaN).
  auto x = HostTensor::fromVector<float>({2, 2}, {0, 0, 3, 4});
  auto out = runForward(
      [&](ir::Graph& gr, auto in) {
        auto y = addOp(gr, "ReduceL2", in, reduceAttrs({1}, 0));
        auto gy = HostTensor::fromVector<float>({2}, {1, 1});
        gr.addTensor("gy", gy.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(gy));
        Attributes a;
        a.set("axes", std::vector<int64_t>{1});
        a.set("mode", std::string("l2"));
        return addOp(gr, "ReduceGrad", {"gy", in[0], y[0]}, a, 1, ir::kXtrainDomain, 0);
      },
      {x});
  EXPECT_TRUE(allClose(out[0], HostTensor::fromVector<float>({2, 2}, {0, 0, 0.6f, 0.8f})));
}

TEST(Reduce2Ops, ErrorsNameTheOp) {
  auto x = randomTensor({2, 3}, 16);
  for (const auto& type : kTypes) {
    expectError(
        [&] {
          runForward([&](ir::Graph& g, auto in) { return addOp(g, type, in, reduceAttrs({2}, 1)); },
                     {x});
        },
        {type, "axis 2", "out of range"});
    expectError(
        [&] {
          runForward(
              [&](ir::Graph& g, auto in) {
                return addOp(g, type, in, reduceAttrs({1, -1}, 1));
              },
              {x});
        },
        {type, "repeated"});
  }
  auto xi = HostTensor::fromVector<int64_t>({2}, {1, 2});
  expectError(
      [&] { runForward([](ir::Graph& g, auto in) { return addOp(g, "ReduceL2", in); }, {xi}); },
      {"ReduceL2", "INT64", "FLOAT or FLOAT16"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              Attributes a;
              a.set("axes", std::vector<int64_t>{0});
              a.set("mode", std::string("mean"));
              return addOp(g, "ReduceGrad", {in[0], in[0], in[0]}, a, 1, ir::kXtrainDomain, 0);
            },
            {HostTensor::fromVector<float>({1}, {1})});
      },
      {"ReduceGrad", "mode 'mean'"});
}

}  // namespace
}  // namespace xtrain::testing

namespace xtrain::testing {
namespace {

TEST(Reduce2Ops, Float16RunsPromoted) {
  auto xf = randomTensor({3, 8}, 40, 0.5f, 1.5f);
  HostTensor x(TensorInfo(DataType::FLOAT16, xf.shape()));
  for (int64_t i = 0; i < x.nelms(); ++i) x.setFromDouble(i, xf.getAsDouble(i));
  for (const auto& type : kTypes) {
    auto out = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, type, in, reduceAttrs({1}, 0)); }, {x});
    ASSERT_EQ(out[0].dataType(), DataType::FLOAT16) << type;
    auto ref = reduceRef(type, x, {1}, false);
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(out[0].getAsDouble(i), ref.getAsDouble(i), 2e-3 * std::abs(ref.getAsDouble(i)))
          << type;
    }
  }
}

}  // namespace
}  // namespace xtrain::testing
