// ReduceSum and ReduceMean: every axis subset against a naive reference, opset forms, gradients,
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

TensorId addConstInts(ir::Graph& g, const TensorId& id, const std::vector<int64_t>& values) {
  auto v = HostTensor::fromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
  g.addTensor(id, v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
  return id;
}

Attributes reduceAttrs(const std::vector<int64_t>& axes, int64_t keepdims) {
  Attributes a;
  a.set("axes", axes);
  a.set("keepdims", keepdims);
  return a;
}

// Sum (or mean) over `axes` (empty: all) with plain loops over every input element, in double.
HostTensor reduceRef(const HostTensor& x, const std::vector<int64_t>& axes, bool keepdims,
                     bool mean) {
  const Shape& s = x.shape();
  const auto rank = static_cast<int64_t>(s.size());
  std::vector<bool> red(s.size(), false);
  for (auto a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  if (axes.empty()) red.assign(s.size(), true);
  Shape os, keptShape;
  int64_t count = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    keptShape.push_back(red[d] ? 1 : s[d]);
    if (red[d]) count *= s[d];
    if (!red[d])
      os.push_back(s[d]);
    else if (keepdims)
      os.push_back(1);
  }
  std::vector<double> acc(static_cast<size_t>(shapeNelms(keptShape)), 0.0);
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
    acc[static_cast<size_t>(o)] += x.getAsDouble(i);
  }
  HostTensor y(TensorInfo(x.dataType(), os));
  for (int64_t i = 0; i < y.nelms(); ++i) {
    const double v = acc[static_cast<size_t>(i)];
    y.setFromDouble(i, mean ? v / static_cast<double>(count) : v);
  }
  return y;
}

// Every subset of the axes of a rank-4 tensor (with a size-1 dimension), keepdims 0 and 1, both
// ops.
TEST(ReduceOps, EveryAxisSubsetMatchesReference) {
  auto x = randomTensor({3, 1, 4, 5}, 1);
  for (const char* type : {"ReduceSum", "ReduceMean"}) {
    const bool mean = std::string(type) == "ReduceMean";
    // Bit 4 of the mask spells the axes negatively; no bit among 0-3 means "absent: all axes".
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
        EXPECT_TRUE(allClose(out[0], reduceRef(x, axes, keep != 0, mean), 1e-6, 1e-6))
            << type << " axes " << shapeToString(axes) << " keepdims " << keep;
      }
    }
  }
}

TEST(ReduceOps, NegativeAxesAndDefaultKeepdims) {
  auto x = randomTensor({2, 3, 4}, 2);
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ReduceSum", {in[0], addConstInts(g, "axes", {-1, 0})});
      },
      {x});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3, 1}));
  EXPECT_TRUE(allClose(out[0], reduceRef(x, {0, 2}, true, false), 1e-6, 1e-6));
  Attributes a;
  a.set("axes", std::vector<int64_t>{-2});
  auto mean = runForward([&](ir::Graph& g, auto in) { return addOp(g, "ReduceMean", in, a); }, {x});
  EXPECT_TRUE(allClose(mean[0], reduceRef(x, {1}, true, true), 1e-6, 1e-6));
}

TEST(ReduceSumOp, Opset11AttributeEqualsOpset13Input) {
  auto x = randomTensor({4, 3, 2}, 3);
  for (int64_t keep : {0, 1}) {
    auto a11 = runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "ReduceSum", in, reduceAttrs({0, 2}, keep), 1, ir::kOnnxDomain, 11);
        },
        {x});
    auto a13 = runForward(
        [&](ir::Graph& g, auto in) {
          Attributes a;
          a.set("keepdims", keep);
          return addOp(g, "ReduceSum", {in[0], addConstInts(g, "axes", {0, 2})}, a, 1,
                       ir::kOnnxDomain, 13);
        },
        {x});
    EXPECT_TRUE(allClose(a11[0], a13[0], 0, 0)) << "keepdims " << keep;
    EXPECT_TRUE(allClose(a13[0], reduceRef(x, {0, 2}, keep != 0, false), 1e-6, 1e-6));
  }
}

TEST(ReduceSumOp, AbsentOrEmptyAxesAndNoop) {
  auto x = randomTensor({2, 3}, 4);
  auto all11 = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, {}, 1, ir::kOnnxDomain, 11); },
      {x});
  auto all13 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ReduceSum", {in[0], addConstInts(g, "axes", {})}, {}, 1, ir::kOnnxDomain,
                     13);
      },
      {x});
  EXPECT_EQ(all11[0].shape(), (Shape{1, 1}));
  EXPECT_TRUE(allClose(all11[0], reduceRef(x, {0, 1}, true, false), 1e-6, 1e-6));
  EXPECT_TRUE(allClose(all11[0], all13[0], 0, 0));
  Attributes noop;
  noop.set("noop_with_empty_axes", int64_t{1});
  noop.set("keepdims", int64_t{0});
  auto same =
      runForward([&](ir::Graph& g,
                     auto in) { return addOp(g, "ReduceSum", in, noop, 1, ir::kOnnxDomain, 13); },
                 {x});
  EXPECT_TRUE(allClose(same[0], x, 0, 0));
  auto same2 = runForward(
      [&](ir::Graph& g, auto in) {
        return addOp(g, "ReduceSum", {in[0], addConstInts(g, "axes", {})}, noop, 1, ir::kOnnxDomain,
                     13);
      },
      {x});
  EXPECT_TRUE(allClose(same2[0], x, 0, 0));
  // The mean over everything of a scalar, and keepdims=0 over everything gives a scalar.
  auto scalar = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMean", in, reduceAttrs({}, 0)); },
      {HostTensor::scalar(3)});
  EXPECT_EQ(scalar[0].toVector<float>(), std::vector<float>{3});
  auto flat = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMean", in, reduceAttrs({}, 0)); }, {x});
  EXPECT_EQ(flat[0].shape(), Shape{});
  EXPECT_TRUE(allClose(flat[0], reduceRef(x, {0, 1}, false, true), 1e-6, 1e-6));
}

TEST(ReduceSumOp, IntegerTypesAndEmptyDimensions) {
  auto x = HostTensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, int64_t{1} << 40});
  auto out = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, reduceAttrs({1}, 0)); }, {x});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{6, 9 + (int64_t{1} << 40)}));
  auto x32 = HostTensor::fromVector<int32_t>({2, 2}, {1, -2, 3, 4});
  auto out32 = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, reduceAttrs({0}, 1)); }, {x32});
  EXPECT_EQ(out32[0].toVector<int32_t>(), (std::vector<int32_t>{4, 2}));

  HostTensor empty(TensorInfo(DataType::FLOAT, {0, 3}));
  auto zeros = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, reduceAttrs({0}, 0)); },
      {empty});
  EXPECT_EQ(zeros[0].toVector<float>(), (std::vector<float>{0, 0, 0}));
  auto none = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, reduceAttrs({1}, 1)); },
      {empty});
  EXPECT_EQ(none[0].shape(), (Shape{0, 1}));
  auto nan = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMean", in, reduceAttrs({0}, 0)); },
      {empty});
  EXPECT_TRUE(std::isnan(nan[0].span<float>()[0]));
}

// A single element is its own sum and mean: -0 keeps its sign (0 + -0 would be +0), as before the
// sums became folds.
TEST(ReduceSumOp, SingleElementKeepsNegativeZero) {
  auto x = HostTensor::fromVector<float>({1, 1}, {-0.0f});
  for (const char* op : {"ReduceSum", "ReduceMean"}) {
    auto out = runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, op, in, reduceAttrs({0, 1}, 0));
        },
        {x});
    const float v = out[0].span<float>()[0];
    EXPECT_EQ(v, 0.0f) << op;
    EXPECT_TRUE(std::signbit(v)) << op;
  }
  auto two = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, reduceAttrs({0}, 0)); },
      {HostTensor::fromVector<float>({2}, {-0.0f, -0.0f})});
  EXPECT_FALSE(std::signbit(two[0].span<float>()[0]));  // summed from the identity 0
}

// Summing a million copies of 0.1f in float would lose about 1% (the sum outgrows the increments).
TEST(ReduceSumOp, AccumulatesAccurately) {
  HostTensor x(TensorInfo(DataType::FLOAT, {1000, 1000}));
  for (auto& v : x.span<float>()) v = 0.1f;
  const double want = 1e6 * static_cast<double>(0.1f);
  for (const auto& axes :
       {std::vector<int64_t>{0, 1}, std::vector<int64_t>{1}, std::vector<int64_t>{0}}) {
    auto out = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, reduceAttrs(axes, 0)); },
        {x});
    const double scale = axes.size() == 2 ? 1.0 : 1e-3;
    for (float v : out[0].span<float>()) EXPECT_NEAR(v, want * scale, want * scale * 1e-7);
  }
  auto mean = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ReduceMean", in, reduceAttrs({}, 0)); }, {x});
  EXPECT_FLOAT_EQ(mean[0].span<float>()[0], 0.1f);
}

TEST(ReduceOps, Gradients) {
  auto x = randomTensor({3, 2, 4}, 5);
  for (const char* type : {"ReduceSum", "ReduceMean"}) {
    for (const auto& axes : std::vector<std::vector<int64_t>>{{0}, {1, -1}, {}, {0, 1, 2}}) {
      for (int64_t keep : {0, 1}) {
        expectGradientsMatch(
            [&](ir::Graph& g, auto in) {
              return addOp(g, type, in, reduceAttrs(axes, keep), 1, ir::kOnnxDomain, 11);
            },
            {x});
      }
    }
  }
  // Opset 13 ReduceSum with the axes input and the noop form.
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ReduceSum", {in[0], addConstInts(g, "a", {1})});
      },
      {x});
  Attributes noop;
  noop.set("noop_with_empty_axes", int64_t{1});
  expectGradientsMatch([&](ir::Graph& g, auto in) { return addOp(g, "ReduceSum", in, noop); }, {x});
}

TEST(ReduceOps, Errors) {
  auto x = randomTensor({2, 3}, 6);
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ReduceSum", {in[0], addConstInts(g, "a", {2})});
            },
            {x});
      },
      {"ReduceSum", "op_under_test", "axis 2", "out of range", "FLOAT[2,3]"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ReduceMean", in, reduceAttrs({-3}, 1), 1, ir::kOnnxDomain, 11);
            },
            {x});
      },
      {"ReduceMean", "axis -3", "out of range"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ReduceSum", {in[0], addConstInts(g, "a", {1, -1})});
            },
            {x});
      },
      {"ReduceSum", "repeated"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              g.addTensor("dyn_axes", TensorInfo(DataType::INT64, {1}), ir::TensorKind::Stream);
              return addOp(g, "ReduceSum", {in[0], "dyn_axes"});
            },
            {x});
      },
      {"ReduceSum", "dyn_axes", "constant"});
}

}  // namespace
}  // namespace xtrain::testing
