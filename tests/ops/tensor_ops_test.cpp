// Shape, Size, ConstantOfShape, Range, Tile, Pad, OneHot, CumSum, Trilu and CastLike: forward
// against double-precision reference loops, gradients against finite differences, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

HostTensor i64(const Shape& shape, const std::vector<int64_t>& v) {
  return HostTensor::fromVector<int64_t>(shape, v);
}

// Adds a constant tensor to the graph (runForward makes float inputs Variables).
TensorId addConst(ir::Graph& g, const std::string& id, const HostTensor& v) {
  g.addTensor(id, v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
  return id;
}

ir::Op& addOpAt(ir::Graph& g, const std::string& type, std::vector<TensorId> inputs, Attributes a,
                int opset, int numOutputs = 1) {
  ir::OpSpec spec;
  spec.type = type;
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(a);
  spec.opset = opset;
  spec.numOutputs = numOutputs;
  spec.name = "op_under_test";
  return g.addOp(std::move(spec));
}

// ---- Shape, Size -------------------------------------------------------------------------------

TEST(ShapeOp, StartEndOfOpset15MatchSlicingTheShape) {
  const Shape s{2, 3, 4, 5};
  for (int64_t start = -6; start <= 6; ++start) {
    for (int64_t end = -6; end <= 6; ++end) {
      auto out = runForward(
          [&](ir::Graph& g, auto in) {
            return std::vector<TensorId>{
                addOpAt(g, "Shape", in, attrs({{"start", start}, {"end", end}}), 15).outputs[0]};
          },
          {randomTensor(s, 1)});
      // Reference: Python's s[start:end].
      const auto r = static_cast<int64_t>(s.size());
      int64_t a = start < 0 ? std::max<int64_t>(start + r, 0) : std::min(start, r);
      int64_t b = end < 0 ? std::max<int64_t>(end + r, 0) : std::min(end, r);
      std::vector<int64_t> want;
      for (int64_t i = a; i < b; ++i) want.push_back(s[static_cast<size_t>(i)]);
      EXPECT_EQ(out[0].toVector<int64_t>(), want) << start << " " << end;
    }
  }
  auto whole = runForward([](ir::Graph& g, auto in) { return addOp(g, "Shape", in); },
                          {HostTensor(TensorInfo(DataType::BOOL, {3, 0, 2}))});
  EXPECT_EQ(whole[0].toVector<int64_t>(), (std::vector<int64_t>{3, 0, 2}));
}

TEST(SizeOp, CountsElementsOfAnyType) {
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Size", in); },
                        {i64({2, 3, 7}, std::vector<int64_t>(42, 1))});
  EXPECT_EQ(out[0].shape(), Shape{});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{42}));
}

// ---- ConstantOfShape ---------------------------------------------------------------------------

TEST(ConstantOfShapeOp, DefaultZeroFloatAndTypedValues) {
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "ConstantOfShape", in); },
                        {i64({2}, {2, 3})});
  EXPECT_EQ(out[0].info(), TensorInfo(DataType::FLOAT, {2, 3}));
  EXPECT_EQ(out[0].toVector<float>(), std::vector<float>(6, 0.0f));

  out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ConstantOfShape", in,
                     attrs({{"value", int64_t{(int64_t{1} << 60) + 1}}, {"dtype", int64_t{7}}}));
      },
      {i64({1}, {3})});
  EXPECT_EQ(out[0].toVector<int64_t>(), std::vector<int64_t>(3, (int64_t{1} << 60) + 1));

  out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ConstantOfShape", in, attrs({{"value", 1.0f}, {"dtype", int64_t{9}}}));
      },
      {i64({2}, {2, 0})});
  EXPECT_EQ(out[0].info(), TensorInfo(DataType::BOOL, {2, 0}));

  out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ConstantOfShape", in, attrs({{"value", 2.5f}, {"dtype", int64_t{10}}}));
      },
      {i64({0}, {})});
  EXPECT_EQ(out[0].info(), TensorInfo(DataType::FLOAT16, {}));
  EXPECT_EQ(out[0].getAsDouble(0), 2.5);
}

TEST(ConstantOfShapeOp, Errors) {
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ConstantOfShape", in); },
                   {i64({2}, {2, -1})});
      },
      {"ConstantOfShape 'op_under_test'", "negative dimension -1"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ConstantOfShape", in); },
                   {HostTensor::fromVector<float>({1}, {2})});
      },
      {"ConstantOfShape", "1-D INT64 or INT32"});
}

// An INT32 shape, as PopART accepts.
TEST(ConstantOfShapeOp, Int32Shape) {
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ConstantOfShape", in, attrs({{"value", 5.0f}}));
      },
      {HostTensor::fromVector<int32_t>({2}, {2, 3})});
  EXPECT_EQ(out[0].info(), TensorInfo(DataType::FLOAT, {2, 3}));
  EXPECT_EQ(out[0].toVector<float>(), std::vector<float>(6, 5.0f));
}

// ---- Range
// ---------------------------------------------------------------------------------------

TEST(RangeOp, IntegerAndFloatRangesMatchArange) {
  struct Case {
    double start, limit, delta;
  };
  for (const Case& c :
       {Case{0, 10, 3}, Case{5, -3, -2}, Case{2, 2, 1}, Case{3, 0, 1}, Case{-4, 4, 1}}) {
    auto out = runForward(
        [&](ir::Graph& g, auto) {
          return addOp(g, "Range",
                       {addConst(g, "s", i64({}, {static_cast<int64_t>(c.start)})),
                        addConst(g, "l", i64({}, {static_cast<int64_t>(c.limit)})),
                        addConst(g, "d", i64({}, {static_cast<int64_t>(c.delta)}))});
        },
        {});
    std::vector<int64_t> want;
    const auto n =
        std::max<int64_t>(static_cast<int64_t>(std::ceil((c.limit - c.start) / c.delta)), 0);
    for (int64_t i = 0; i < n; ++i) want.push_back(static_cast<int64_t>(c.start + i * c.delta));
    EXPECT_EQ(out[0].toVector<int64_t>(), want);
  }
  auto out = runForward(
      [&](ir::Graph& g, auto) {
        return addOp(
            g, "Range",
            {addConst(g, "s", HostTensor::scalar(0.5f)), addConst(g, "l", HostTensor::scalar(2.0f)),
             addConst(g, "d", HostTensor::scalar(0.25f))});
      },
      {});
  EXPECT_EQ(out[0].toVector<float>(), (std::vector<float>{0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f}));
  out = runForward(
      [&](ir::Graph& g, auto) {
        return addOp(g, "Range",
                     {addConst(g, "s", HostTensor::fromVector<int32_t>({}, {7})),
                      addConst(g, "l", HostTensor::fromVector<int32_t>({}, {1})),
                      addConst(g, "d", HostTensor::fromVector<int32_t>({}, {-3}))});
      },
      {});
  EXPECT_EQ(out[0].toVector<int32_t>(), (std::vector<int32_t>{7, 4}));
}

TEST(RangeOp, Errors) {
  expectError(
      [] {
        runForward(
            [&](ir::Graph& g, auto) {
              return addOp(g, "Range",
                           {addConst(g, "s", i64({}, {0})), addConst(g, "l", i64({}, {4})),
                            addConst(g, "d", i64({}, {0}))});
            },
            {});
      },
      {"Range 'op_under_test'", "delta is 0"});
  expectError(
      [] {
        runForward(
            [&](ir::Graph& g, auto in) {
              return addOp(g, "Range",
                           {in[0], addConst(g, "l", HostTensor::scalar(4)),
                            addConst(g, "d", HostTensor::scalar(1))});
            },
            {HostTensor::scalar(0)});
      },
      {"Range 'op_under_test'", "input 0 (start", "must be a constant"});
  expectError(
      [] {
        runForward(
            [&](ir::Graph& g, auto) {
              return addOp(g, "Range",
                           {addConst(g, "s", i64({}, {0})), addConst(g, "l", HostTensor::scalar(4)),
                            addConst(g, "d", i64({}, {1}))});
            },
            {});
      },
      {"Range", "input 1 (limit) is FLOAT", "one type"});
}

// ---- Tile
// ----------------------------------------------------------------------------------------

HostTensor tileRef(const HostTensor& x, const std::vector<int64_t>& reps) {
  Shape out = x.shape();
  for (size_t d = 0; d < out.size(); ++d) out[d] *= reps[d];
  HostTensor y(TensorInfo(x.dataType(), out));
  for (int64_t i = 0; i < y.nelms(); ++i) {
    auto idx = unravel(i, out);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] %= x.shape()[d];
    y.setFromDouble(i, x.getAsDouble(ravel(idx, x.shape())));
  }
  return y;
}

TEST(TileOp, MatchesReferenceForAnyTypeAndHasGradient) {
  struct Case {
    Shape shape;
    std::vector<int64_t> reps;
  };
  for (const Case& c : {Case{{3}, {4}}, Case{{2, 3}, {2, 1}}, Case{{2, 3}, {1, 3}},
                        Case{{2, 1, 3}, {2, 3, 2}}, Case{{2, 3}, {0, 2}}, Case{{}, {}}}) {
    HostTensor x = randomTensor(c.shape, 3);
    const auto n = static_cast<int64_t>(c.reps.size());
    auto out = runForward([&](ir::Graph& g, auto in) { return addOp(g, "Tile", in); },
                          {x, i64({n}, c.reps)});
    EXPECT_TRUE(allClose(out[0], tileRef(x, c.reps), 0, 0));
    HostTensor xi = x.castTo(DataType::INT64);
    out = runForward([&](ir::Graph& g, auto in) { return addOp(g, "Tile", in); },
                     {xi, i64({n}, c.reps)});
    EXPECT_TRUE(allClose(out[0], tileRef(xi, c.reps), 0, 0));
    expectGradientsMatch([&](ir::Graph& g, auto in) { return addOp(g, "Tile", in); },
                         {x, i64({n}, c.reps)});
  }
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Tile", in); },
                   {randomTensor({2, 2}, 1), i64({1}, {2})});
      },
      {"Tile 'op_under_test'", "repeats [2] has 1 entries", "rank 2"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Tile", in); },
                   {randomTensor({2, 2}, 1), i64({2}, {int64_t{1} << 40, int64_t{1} << 40})});
      },
      {"Tile 'op_under_test'", "overflows"});
}

// ---- Pad
// -------------------------------------------------------------------------------------------

// Pad with numpy's modes, one output element at a time.
HostTensor padRef(const HostTensor& x, const std::vector<int64_t>& pads, const std::string& mode,
                  double value) {
  const Shape& s = x.shape();
  const size_t r = s.size();
  Shape out(r);
  for (size_t d = 0; d < r; ++d) out[d] = s[d] + pads[d] + pads[d + r];
  HostTensor y(TensorInfo(x.dataType(), out));
  for (int64_t i = 0; i < y.nelms(); ++i) {
    auto idx = unravel(i, out);
    bool constant = false;
    for (size_t d = 0; d < r; ++d) {
      // The input after cropping negative pads: [lo, hi).
      const int64_t lo = std::max<int64_t>(-pads[d], 0);
      const int64_t hi = s[d] - std::max<int64_t>(-pads[d + r], 0);
      int64_t j = idx[d] - pads[d];
      if (j < lo || j >= hi) {
        if (mode == "constant") {
          constant = true;
        } else if (mode == "edge") {
          j = j < lo ? lo : hi - 1;
        } else {
          while (j < lo || j >= hi) j = j < lo ? 2 * lo - j : 2 * (hi - 1) - j;
        }
      }
      idx[d] = j;
    }
    y.setFromDouble(i, constant ? value : x.getAsDouble(ravel(idx, s)));
  }
  return y;
}

TEST(PadOp, EveryModeMatchesReferenceIncludingCrops) {
  struct Case {
    Shape shape;
    std::vector<int64_t> pads;
  };
  const std::vector<Case> cases = {{{5}, {2, 3}},
                                   {{3, 4}, {1, 2, 2, 1}},
                                   {{3, 4}, {0, 0, 0, 0}},
                                   {{2, 3, 4}, {1, 0, 2, 0, 2, 1}},
                                   {{4, 5}, {-1, 2, 1, -2}},
                                   {{1, 3}, {2, 0, 0, 0}},
                                   {{3, 1, 4}, {0, 1, 3, 0, 2, 3}}};
  for (const auto& c : cases) {
    HostTensor x = randomTensor(c.shape, 5);
    const auto n = static_cast<int64_t>(c.pads.size());
    for (std::string mode : {"constant", "edge", "reflect"}) {
      bool reflectOk = true;
      for (size_t d = 0; d < c.shape.size(); ++d) {
        const int64_t kept = c.shape[d] + std::min<int64_t>(c.pads[d], 0) +
                             std::min<int64_t>(c.pads[d + c.shape.size()], 0);
        if (std::max(c.pads[d], c.pads[d + c.shape.size()]) >= kept &&
            std::max(c.pads[d], c.pads[d + c.shape.size()]) > 0) {
          reflectOk = false;
        }
      }
      if (mode == "reflect" && !reflectOk) continue;
      auto build = [&](ir::Graph& g, auto in) {
        return addOp(g, "Pad", {in[0], in[1], addConst(g, "v", HostTensor::scalar(0.5f))},
                     attrs({{"mode", mode}}), 1, ir::kOnnxDomain, 13);
      };
      auto out = runForward(build, {x, i64({n}, c.pads)});
      EXPECT_TRUE(allClose(out[0], padRef(x, c.pads, mode, 0.5), 0, 0))
          << mode << " " << shapeToString(c.shape);
      expectGradientsMatch(build, {x, i64({n}, c.pads)});
      // INT64 data: the byte-copy kernel with the value converted.
      HostTensor xi = randomTensor(c.shape, 6, -50, 50).castTo(DataType::INT64);
      auto outi = runForward(
          [&](ir::Graph& g, auto in) {
            return addOp(g, "Pad", {in[0], in[1], addConst(g, "v", i64({}, {7}))},
                         attrs({{"mode", mode}}));
          },
          {xi, i64({n}, c.pads)});
      EXPECT_TRUE(allClose(outi[0], padRef(xi, c.pads, mode, 7), 0, 0));
    }
  }
}

TEST(PadOp, Opset2AttributesEqualOpset11Inputs) {
  HostTensor x = randomTensor({2, 3}, 9);
  const std::vector<int64_t> pads{1, 0, 0, 2};
  auto old = runForward(
      [&](ir::Graph& g, auto in) {
        return std::vector<TensorId>{
            addOpAt(g, "Pad", in, attrs({{"pads", pads}, {"value", 1.5f}}), 10).outputs[0]};
      },
      {x});
  auto now = runForward(
      [&](ir::Graph& g, auto in) {
        return std::vector<TensorId>{
            addOpAt(g, "Pad", {in[0], in[1], addConst(g, "v", HostTensor::scalar(1.5f))}, {}, 11)
                .outputs[0]};
      },
      {x, i64({4}, pads)});
  EXPECT_TRUE(allClose(old[0], padRef(x, pads, "constant", 1.5), 0, 0));
  EXPECT_TRUE(allClose(now[0], old[0], 0, 0));
  // Without constant_value the pad is 0.
  auto zero =
      runForward([&](ir::Graph& g, auto in) { return addOp(g, "Pad", in); }, {x, i64({4}, pads)});
  EXPECT_TRUE(allClose(zero[0], padRef(x, pads, "constant", 0), 0, 0));
}

TEST(PadOp, Errors) {
  auto pad = [](const Shape& s, const std::vector<int64_t>& pads, const std::string& mode) {
    runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Pad", in, attrs({{"mode", mode}}));
        },
        {randomTensor(s, 1), i64({static_cast<int64_t>(pads.size())}, pads)});
  };
  expectError(
      [&] {
        pad({3}, {3, 0}, "reflect");
      },
      {"Pad 'op_under_test'", "reflect", "smaller than the dimension"});
  expectError([&] { pad({3, 2}, {1, 1}, "constant"); }, {"Pad", "pads [1,1] has 2 entries", "4"});
  expectError([&] { pad({3}, {1, 1}, "wrap"); }, {"Pad", "mode 'wrap'"});
  expectError([&] { pad({3}, {-2, -2}, "constant"); }, {"Pad", "below 0"});
  expectError([&] { pad({0, 2}, {1, 0, 0, 0}, "edge"); }, {"Pad", "no elements"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Pad", {in[0], in[1]});
            },
            {randomTensor({3}, 1), randomTensor({2}, 2)});
      },
      {"Pad 'op_under_test'", "is not a constant"});
}

// ---- OneHot
// --------------------------------------------------------------------------------------

HostTensor oneHotRef(const HostTensor& idx, int64_t depth, int64_t axis, bool negative, double off,
                     double on, DataType type) {
  Shape out = idx.shape();
  if (axis < 0) axis += static_cast<int64_t>(out.size()) + 1;
  out.insert(out.begin() + axis, depth);
  HostTensor y(TensorInfo(type, out));
  for (int64_t i = 0; i < y.nelms(); ++i) {
    auto o = unravel(i, out);
    const int64_t k = o[static_cast<size_t>(axis)];
    o.erase(o.begin() + axis);
    auto v = static_cast<int64_t>(idx.getAsDouble(ravel(o, idx.shape())));
    if (v < 0 && negative) v += depth;
    y.setFromDouble(i, v == k ? on : off);
  }
  return y;
}

TEST(OneHotOp, EveryAxisNegativeIndicesAndOutOfRange) {
  HostTensor idx = i64({2, 3}, {0, 2, -1, 4, -4, 3});
  for (int64_t axis = -3; axis <= 2; ++axis) {
    for (int opset : {9, 11}) {
      auto out = runForward(
          [&](ir::Graph& g, auto in) {
            return std::vector<TensorId>{
                addOpAt(g, "OneHot",
                        {in[0], addConst(g, "d", i64({}, {4})),
                         addConst(g, "v", HostTensor::fromVector<float>({2}, {-1, 3}))},
                        attrs({{"axis", axis}}), opset)
                    .outputs[0]};
          },
          {idx});
      EXPECT_TRUE(
          allClose(out[0], oneHotRef(idx, 4, axis, opset >= 11, -1, 3, DataType::FLOAT), 0, 0))
          << axis << " " << opset;
    }
  }
  // Gradient with respect to the values.
  expectGradientsMatch(
      [&](ir::Graph& g, auto in) {
        return addOp(g, "OneHot", {addConst(g, "i", idx), addConst(g, "d", i64({}, {4})), in[0]},
                     attrs({{"axis", int64_t{1}}}), 1, ir::kOnnxDomain, 11);
      },
      {HostTensor::fromVector<float>({2}, {0.25f, -2.0f})});
  // Float indices, INT64 values.
  HostTensor fidx = HostTensor::fromVector<float>({3}, {1, 0, 2});
  auto out = runForward(
      [&](ir::Graph& g, auto) {
        return addOp(g, "OneHot",
                     {addConst(g, "i", fidx), addConst(g, "d", HostTensor::scalar(3)),
                      addConst(g, "v", i64({2}, {0, 1}))});
      },
      {});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 1, 0, 0, 0, 0, 1}));
  expectError(
      [] {
        runForward(
            [&](ir::Graph& g, auto in) {
              return addOp(
                  g, "OneHot",
                  {in[0], addConst(g, "d", i64({}, {3})), addConst(g, "v", i64({3}, {0, 1, 2}))});
            },
            {i64({1}, {0})});
      },
      {"OneHot 'op_under_test'", "two elements"});
}

// ---- CumSum
// --------------------------------------------------------------------------------------

HostTensor cumSumRef(const HostTensor& x, int64_t axis, bool exclusive, bool reverse) {
  const Shape& s = x.shape();
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  HostTensor y(x.info());
  for (int64_t i = 0; i < y.nelms(); ++i) {
    auto idx = unravel(i, s);
    const int64_t k = idx[static_cast<size_t>(axis)];
    double sum = 0;
    for (int64_t j = 0; j < s[static_cast<size_t>(axis)]; ++j) {
      const bool take = reverse ? (exclusive ? j > k : j >= k) : (exclusive ? j < k : j <= k);
      if (!take) continue;
      idx[static_cast<size_t>(axis)] = j;
      sum += x.getAsDouble(ravel(idx, s));
    }
    y.setFromDouble(i, sum);
  }
  return y;
}

TEST(CumSumOp, EveryFlagAndAxisForFloatAndIntegersWithGradient) {
  HostTensor x = randomTensor({3, 4, 2}, 11);
  HostTensor xi = randomTensor({3, 4, 2}, 12, -100, 100).castTo(DataType::INT64);
  for (int64_t axis = -3; axis < 3; ++axis) {
    for (int64_t exclusive : {0, 1}) {
      for (int64_t reverse : {0, 1}) {
        auto build = [&](ir::Graph& g, auto in) {
          return addOp(g, "CumSum", in, attrs({{"exclusive", exclusive}, {"reverse", reverse}}));
        };
        const HostTensor ax = HostTensor::fromVector<int32_t>({}, {static_cast<int32_t>(axis)});
        auto out = runForward(build, {x, ax});
        EXPECT_TRUE(allClose(out[0], cumSumRef(x, axis, exclusive, reverse), 1e-5, 1e-6));
        out = runForward(build, {xi, i64({}, {axis})});
        EXPECT_TRUE(allClose(out[0], cumSumRef(xi, axis, exclusive, reverse), 0, 0));
        expectGradientsMatch(build, {x, ax});
      }
    }
  }
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "CumSum", in); }, {x, i64({}, {3})});
      },
      {"CumSum 'op_under_test'", "axis 3"});
}

// ---- Trilu
// ---------------------------------------------------------------------------------------

TEST(TriluOp, UpperAndLowerForManyKWithGradient) {
  HostTensor x = randomTensor({2, 3, 5}, 13);
  for (int64_t upper : {0, 1}) {
    for (int64_t k : {std::numeric_limits<int64_t>::min(), int64_t{-4}, int64_t{-1}, int64_t{0},
                      int64_t{2}, int64_t{5}, std::numeric_limits<int64_t>::max()}) {
      auto build = [&](ir::Graph& g, auto in) {
        return addOp(g, "Trilu", in, attrs({{"upper", upper}}), 1, ir::kOnnxDomain, 14);
      };
      auto out = runForward(build, {x, i64({}, {k})});
      HostTensor want(x.info());
      for (int64_t i = 0; i < x.nelms(); ++i) {
        auto idx = unravel(i, x.shape());
        const double diff = static_cast<double>(idx[2]) - static_cast<double>(idx[1]);
        const bool keep = upper ? diff >= static_cast<double>(k) : diff <= static_cast<double>(k);
        want.setFromDouble(i, keep ? x.getAsDouble(i) : 0.0);
      }
      EXPECT_TRUE(allClose(out[0], want, 0, 0)) << upper << " " << k;
      if (k > -10 && k < 10) expectGradientsMatch(build, {x, i64({}, {k})});
    }
  }
  auto noK = runForward([](ir::Graph& g, auto in) { return addOp(g, "Trilu", in); },
                        {i64({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(noK[0].toVector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 4}));
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Trilu", in); },
                   {randomTensor({3}, 1)});
      },
      {"Trilu 'op_under_test'", "rank >= 2"});
}

// ---- CastLike
// ------------------------------------------------------------------------------------

TEST(CastLikeOp, CastsToTheTargetsTypeWithGradient) {
  HostTensor x = HostTensor::fromVector<float>({4}, {1.7f, -2.2f, 0.0f, 3.0f});
  auto out = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "CastLike", in, {}, 1, ir::kOnnxDomain, 15); },
      {x, i64({1}, {0})});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{1, -2, 0, 3}));
  out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "CastLike",
                     {in[0], addConst(g, "h", HostTensor(TensorInfo(DataType::FLOAT16, {2})))});
      },
      {x});
  EXPECT_EQ(out[0].dataType(), DataType::FLOAT16);
  EXPECT_NEAR(out[0].getAsDouble(0), 1.7, 1e-3);
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "CastLike",
                     {in[0], addConst(g, "d", HostTensor(TensorInfo(DataType::FLOAT, {1})))});
      },
      {x});
}

}  // namespace
}  // namespace xtrain::testing
