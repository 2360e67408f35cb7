// Data movement ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TensorId addConstInts(ir::Graph& g, const TensorId& id, const std::vector<int64_t>& values) {
  auto v = HostTensor::fromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
  g.addTensor(id, v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
  return id;
}

Attributes ints(const std::string& name, std::vector<int64_t> v) {
  Attributes a;
  a.set(name, std::move(v));
  return a;
}

Attributes intAttr(const std::string& name, int64_t v) {
  Attributes a;
  a.set(name, v);
  return a;
}

HostTensor iota(const Shape& shape, float start = 0) {
  HostTensor t(TensorInfo(DataType::FLOAT, shape));
  std::iota(t.span<float>().begin(), t.span<float>().end(), start);
  return t;
}

std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Multi-index of flat index i in shape s.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

HostTensor transposeRef(const HostTensor& x, const std::vector<int64_t>& perm) {
  Shape os;
  for (int64_t p : perm) os.push_back(x.shape()[static_cast<size_t>(p)]);
  HostTensor y(TensorInfo(x.dataType(), os));
  const auto is = stridesOf(x.shape());
  for (int64_t o = 0; o < y.nelms(); ++o) {
    const auto idx = unravel(o, os);
    int64_t off = 0;
    for (size_t d = 0; d < perm.size(); ++d) off += idx[d] * is[static_cast<size_t>(perm[d])];
    y.setFromDouble(o, x.getAsDouble(off));
  }
  return y;
}

// ----------------------------------------------------------------------------------------------
// Reshape

TEST(ReshapeOp, CopiesZeroDimsAndInfersMinusOne) {
  auto x = iota({2, 3, 4});
  auto shape = HostTensor::fromVector<int64_t>({3}, {0, -1, 2});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Reshape", in); }, {x, shape});
  EXPECT_EQ(out[0].shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(out[0].toVector<float>(), x.toVector<float>());
}

TEST(ReshapeOp, AllowZeroKeepsLiteralZero) {
  HostTensor x(TensorInfo(DataType::FLOAT, {0, 3}));
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Reshape", {in[0], addConstInts(g, "s", {3, 0})}, intAttr("allowzero", 1),
                     1, ir::kOnnxDomain, 14);
      },
      {x});
  EXPECT_EQ(out[0].shape(), (Shape{3, 0}));
}

TEST(ReshapeOp, AnyElementTypeAndGradient) {
  auto x = HostTensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, kMax});
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Reshape", {in[0], addConstInts(g, "s", {3, 2})});
      },
      {x});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(out[0].toVector<int64_t>(), x.toVector<int64_t>());
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Reshape", {in[0], addConstInts(g, "s", {-1})});
      },
      {randomTensor({2, 3}, 1)});
}

TEST(ReshapeOp, ElementCountMismatchNamesBothShapes) {
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Reshape", {in[0], addConstInts(g, "s", {4, 2})});
            },
            {iota({2, 3})});
      },
      {"Reshape", "op_under_test", "FLOAT[2,3]", "[4,2]"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Reshape", {in[0], addConstInts(g, "s", {-1, -1})});
            },
            {iota({2, 3})});
      },
      {"Reshape", "more than one -1"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Reshape", {in[0], addConstInts(g, "s", {4, -1})});
            },
            {iota({2, 3})});
      },
      {"Reshape", "FLOAT[2,3]", "[4,-1]"});
}

TEST(ReshapeOp, NonConstantShapeIsAnError) {
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              g.addTensor("dyn_shape", TensorInfo(DataType::INT64, {2}), ir::TensorKind::Stream);
              return addOp(g, "Reshape", {in[0], "dyn_shape"});
            },
            {iota({2, 3})});
      },
      {"Reshape", "op_under_test", "dyn_shape", "constant"});
}

// ----------------------------------------------------------------------------------------------
// Flatten

TEST(FlattenOp, AxisVariants) {
  auto x = iota({2, 3, 4});
  const std::vector<std::pair<int64_t, Shape>> cases = {{0, {1, 24}}, {1, {2, 12}}, {2, {6, 4}},
                                                        {3, {24, 1}}, {-1, {6, 4}}, {-3, {1, 24}}};
  for (const auto& [axis, want] : cases) {
    auto out = runForward(
        [axis = axis](ir::Graph& g, auto in) {
          return addOp(g, "Flatten", in, intAttr("axis", axis));
        },
        {x});
    EXPECT_EQ(out[0].shape(), want) << "axis " << axis;
    EXPECT_EQ(out[0].toVector<float>(), x.toVector<float>());
  }
  auto dflt = runForward([](ir::Graph& g, auto in) { return addOp(g, "Flatten", in); }, {x});
  EXPECT_EQ(dflt[0].shape(), (Shape{2, 12}));
  expectGradientsMatch(
      [](ir::Graph& g, auto in) { return addOp(g, "Flatten", in, intAttr("axis", 2)); },
      {randomTensor({2, 3, 2}, 2)});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) { return addOp(g, "Flatten", in, intAttr("axis", 4)); }, {x});
      },
      {"Flatten", "axis 4", "out of range"});
}

// ------------------------------------------------------------------------------------
// Squeeze/Unsqueeze

TEST(SqueezeOp, Opset11AttributeEqualsOpset13Input) {
  auto x = iota({1, 3, 1, 2});
  auto a11 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Squeeze", in, ints("axes", {0, -2}), 1, ir::kOnnxDomain, 11);
      },
      {x});
  auto a13 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Squeeze", {in[0], addConstInts(g, "axes", {0, -2})}, {}, 1,
                     ir::kOnnxDomain, 13);
      },
      {x});
  EXPECT_EQ(a11[0].shape(), (Shape{3, 2}));
  EXPECT_TRUE(allClose(a11[0], a13[0], 0, 0));
  EXPECT_EQ(a13[0].toVector<float>(), x.toVector<float>());
  auto partial = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Squeeze", in, ints("axes", {2}), 1, ir::kOnnxDomain, 11);
      },
      {x});
  EXPECT_EQ(partial[0].shape(), (Shape{1, 3, 2}));
}

TEST(SqueezeOp, WithoutAxesSqueezesAllOnesAndHasGradient) {
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Squeeze", in); },
                        {iota({1, 2, 1, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{2}));
  auto all =
      runForward([](ir::Graph& g, auto in) { return addOp(g, "Squeeze", in); }, {iota({1, 1})});
  EXPECT_EQ(all[0].shape(), (Shape{}));
  expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "Squeeze", in); },
                       {randomTensor({3, 1, 2}, 3)});
}

TEST(SqueezeOp, Errors) {
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Squeeze", in, ints("axes", {1}), 1, ir::kOnnxDomain, 11);
            },
            {iota({1, 3})});
      },
      {"Squeeze", "op_under_test", "axis 1", "size is 3"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Squeeze", {in[0], addConstInts(g, "axes", {2})});
            },
            {iota({1, 3})});
      },
      {"Squeeze", "axis 2", "out of range"});
}

TEST(UnsqueezeOp, Opset11AttributeEqualsOpset13Input) {
  auto x = iota({2, 3});
  // Axes refer to the output (rank 5) and may be unsorted and negative.
  auto a11 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Unsqueeze", in, ints("axes", {-1, 0, 2}), 1, ir::kOnnxDomain, 11);
      },
      {x});
  auto a13 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Unsqueeze", {in[0], addConstInts(g, "axes", {-1, 0, 2})}, {}, 1,
                     ir::kOnnxDomain, 13);
      },
      {x});
  EXPECT_EQ(a11[0].shape(), (Shape{1, 2, 1, 3, 1}));
  EXPECT_TRUE(allClose(a11[0], a13[0], 0, 0));
  EXPECT_EQ(a13[0].toVector<float>(), x.toVector<float>());
  auto scalar = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Unsqueeze", {in[0], addConstInts(g, "axes", {0})});
      },
      {HostTensor::scalar(5)});
  EXPECT_EQ(scalar[0].shape(), (Shape{1}));
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Unsqueeze", {in[0], addConstInts(g, "axes", {1})});
      },
      {randomTensor({3, 2}, 4)});
}

TEST(UnsqueezeOp, Errors) {
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Unsqueeze", {in[0], addConstInts(g, "axes", {1, 1})});
            },
            {iota({2, 3})});
      },
      {"Unsqueeze", "axis 1", "repeated"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Unsqueeze", {in[0], addConstInts(g, "axes", {3})});
            },
            {iota({2, 3})});
      },
      {"Unsqueeze", "axis 3", "out of range"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Unsqueeze", in); }, {iota({2, 3})});
      },
      {"Unsqueeze", "axes"});
}

// --------------------------------------------------------------------------------------------
// Transpose

TEST(TransposeOp, DefaultReversesDimensions) {
  auto x = iota({2, 3, 4});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Transpose", in); }, {x});
  EXPECT_TRUE(allClose(out[0], transposeRef(x, {2, 1, 0}), 0, 0));
}

TEST(TransposeOp, TwoDimensionalWithBlockRemainders) {
  for (const Shape& s : {Shape{67, 45}, Shape{1, 9}, Shape{33, 1}, Shape{64, 32}, Shape{0, 5}}) {
    auto x = iota(s);
    auto out = runForward(
        [](ir::Graph& g, auto in) {
          return addOp(g, "Transpose", in, ints("perm", {1, 0}));
        },
        {x});
    EXPECT_TRUE(allClose(out[0], transposeRef(x, {1, 0}), 0, 0)) << shapeToString(s);
  }
}

TEST(TransposeOp, EveryPermutationOf3DAnd4D) {
  for (const Shape& s : {Shape{3, 4, 5}, Shape{2, 1, 7}, Shape{2, 3, 4, 5}, Shape{3, 1, 2, 40}}) {
    auto x = iota(s);
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      auto out = runForward(
          [&](ir::Graph& g, auto in) { return addOp(g, "Transpose", in, ints("perm", perm)); },
          {x});
      EXPECT_TRUE(allClose(out[0], transposeRef(x, perm), 0, 0))
          << shapeToString(s) << " perm " << shapeToString(perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

// Transformer-sized FLOAT transposes: a weight, the heads' split and the keys' transpose, with odd
// sizes so that tiles have remainders. Exact.
TEST(TransposeOp, LargeFloatTransposesAreExact) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases{
      {{1027, 259}, {1, 0}}, {{8, 131, 4, 64}, {0, 2, 1, 3}}, {{8, 131, 4, 64}, {0, 2, 3, 1}}};
  for (const auto& [s, perm] : cases) {
    auto x = iota(s);
    auto out = runForward(
        [&perm = perm](ir::Graph& g, auto in) {
          return addOp(g, "Transpose", in, ints("perm", perm));
        },
        {x});
    EXPECT_TRUE(allClose(out[0], transposeRef(x, perm), 0, 0))
        << shapeToString(s) << " perm " << shapeToString(perm);
  }
}

TEST(TransposeOp, ByteCopyForOtherElementTypes) {
  auto i64 = HostTensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, kMin});
  auto u8 = HostTensor::fromVector<uint8_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 255});
  auto half =
      HostTensor::fromVector<uint16_t>({3, 2}, {0x3C00, 0x4000, 0x4200, 0x4400, 0xC500, 0x0001});
  for (const auto& [x, perm] : std::vector<std::pair<HostTensor, std::vector<int64_t>>>{
           {i64, {1, 0}}, {u8, {2, 0, 1}}, {half, {1, 0}}}) {
    auto out = runForward(
        [&perm = perm](ir::Graph& g, auto in) {
          return addOp(g, "Transpose", in, ints("perm", perm));
        },
        {x});
    EXPECT_TRUE(allClose(out[0], transposeRef(x, perm), 0, 0)) << x.info().toString();
  }
}

TEST(TransposeOp, GradientAndBadPerm) {
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Transpose", in, ints("perm", {1, 2, 0}));
      },
      {randomTensor({2, 3, 2}, 5)});
  for (const auto& perm :
       std::vector<std::vector<int64_t>>{{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    expectError(
        [&] {
          runForward(
              [&](ir::Graph& g, auto in) { return addOp(g, "Transpose", in, ints("perm", perm)); },
              {iota({2, 3, 4})});
        },
        {"Transpose", "op_under_test", "perm"});
  }
}

// -----------------------------------------------------------------------------------------------
// Concat

HostTensor concatRef(const std::vector<HostTensor>& xs, int64_t axis) {
  Shape os = xs[0].shape();
  const auto a = static_cast<size_t>(axis);
  os[a] = 0;
  for (const auto& x : xs) os[a] += x.shape()[a];
  HostTensor y(TensorInfo(xs[0].dataType(), os));
  for (int64_t o = 0; o < y.nelms(); ++o) {
    auto idx = unravel(o, os);
    size_t k = 0;
    while (idx[a] >= xs[k].shape()[a]) idx[a] -= xs[k++].shape()[a];
    const auto st = stridesOf(xs[k].shape());
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
    y.setFromDouble(o, xs[k].getAsDouble(off));
  }
  return y;
}

TEST(ConcatOp, AlongEveryAxisIncludingEmptyParts) {
  auto a = iota({2, 3, 2});
  for (int64_t axis = -3; axis < 3; ++axis) {
    const auto pos = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    Shape sb = a.shape(), sc = a.shape();
    sb[pos] = 1;
    sc[pos] = 0;
    auto b = iota(sb, 100), c = iota(sc, 200), d = iota(a.shape(), 300);
    auto out = runForward(
        [axis](ir::Graph& g, auto in) { return addOp(g, "Concat", in, intAttr("axis", axis)); },
        {a, b, c, d});
    EXPECT_TRUE(allClose(out[0], concatRef({a, b, c, d}, static_cast<int64_t>(pos)), 0, 0))
        << "axis " << axis;
  }
  auto i32 = HostTensor::fromVector<int32_t>({2, 1}, {1, 2});
  auto j32 = HostTensor::fromVector<int32_t>({2, 2}, {3, 4, 5, 6});
  auto out = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "Concat", in, intAttr("axis", 1)); }, {i32, j32});
  EXPECT_EQ(out[0].toVector<int32_t>(), (std::vector<int32_t>{1, 3, 4, 2, 5, 6}));
}

TEST(ConcatOp, GradientAndErrors) {
  expectGradientsMatch(
      [](ir::Graph& g, auto in) { return addOp(g, "Concat", in, intAttr("axis", -1)); },
      {randomTensor({2, 3}, 6), randomTensor({2, 1}, 7), randomTensor({2, 2}, 8)});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Concat", in, intAttr("axis", 1)); },
                   {iota({2, 3}), iota({3, 3})});
      },
      {"Concat", "op_under_test", "FLOAT[3,3]", "FLOAT[2,3]"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Concat", in, intAttr("axis", 2)); },
                   {iota({2, 3}), iota({2, 3})});
      },
      {"Concat", "axis 2", "out of range"});
}

// ------------------------------------------------------------------------------------------------
// Split

TEST(SplitOp, EqualSplitAndExplicitSizes) {
  auto x = iota({2, 6});
  auto eq = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "Split", in, intAttr("axis", 1), 3); }, {x});
  ASSERT_EQ(eq.size(), 3u);
  EXPECT_EQ(eq[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(eq[1].toVector<float>(), (std::vector<float>{2, 3, 8, 9}));
  // Concat of the parts gives the input back.
  EXPECT_TRUE(allClose(concatRef(eq, 1), x, 0, 0));

  auto s11 = runForward(
      [](ir::Graph& g, auto in) {
        Attributes a = ints("split", {1, 0, 5});
        a.set("axis", int64_t{-1});
        return addOp(g, "Split", in, a, 3, ir::kOnnxDomain, 11);
      },
      {x});
  auto s13 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Split", {in[0], addConstInts(g, "split", {1, 0, 5})}, intAttr("axis", -1),
                     3, ir::kOnnxDomain, 13);
      },
      {x});
  ASSERT_EQ(s11.size(), 3u);
  EXPECT_EQ(s11[1].shape(), (Shape{2, 0}));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(allClose(s11[i], s13[i], 0, 0));
  EXPECT_TRUE(allClose(concatRef(s13, 1), x, 0, 0));

  auto u8 = HostTensor::fromVector<uint8_t>({3, 2}, {1, 2, 3, 4, 5, 255});
  auto parts = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Split", in, ints("split", {2, 1}), 2);
      },
      {u8});
  EXPECT_EQ(parts[0].toVector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(parts[1].toVector<uint8_t>(), (std::vector<uint8_t>{5, 255}));
}

TEST(SplitOp, AbsentAndUnusedOutputsAndGradient) {
  auto x = randomTensor({6, 2}, 9);
  auto build = [](ir::Graph& g, const std::vector<TensorId>& in) {
    ir::OpSpec spec;
    spec.type = "Split";
    spec.inputs = {in[0]};
    spec.outputs = {"p0", "", "p2"};
    spec.opset = 13;
    spec.attrs = ints("split", {1, 2, 3});
    g.addOp(spec);
    return std::vector<TensorId>{"p0", "p2"};
  };
  auto out = runForward(build, {x});
  EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(out[1].toVector<float>(),
            std::vector<float>(x.span<float>().begin() + 6, x.span<float>().end()));
  expectGradientsMatch(build, {x});
  // Only the first of three outputs reaches the loss: the others contribute zeros.
  expectGradientsMatch(
      [](ir::Graph& g, auto in) { return std::vector<TensorId>{addOp(g, "Split", in, {}, 3)[0]}; },
      {x});
}

TEST(SplitOp, Errors) {
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Split", in, {}, 4); }, {iota({6})});
      },
      {"Split", "op_under_test", "size 6", "4 outputs"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Split", in, ints("split", {2, 2}), 2, ir::kOnnxDomain, 11);
            },
            {iota({6})});
      },
      {"Split", "sums to 4", "size 6"});
}

// ------------------------------------------------------------------------------------------------
// Slice

// Indices a Python slice start:end:step takes from range(dim), written from the language's
// definition.
std::vector<int64_t> pythonSlice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto norm = [dim](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -dim ? lo : v + dim;
    return std::min(v, hi);
  };
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = norm(start, 0, dim); i < norm(end, 0, dim); i += step) out.push_back(i);
  } else {
    for (int64_t i = norm(start, -1, dim - 1); i > norm(end, -1, dim - 1); i += step)
      out.push_back(i);
  }
  return out;
}

TEST(SliceOp, ReferenceItselfMatchesKnownNumpyResults) {
  EXPECT_EQ(pythonSlice(10, kMax, kMin, -1), (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(pythonSlice(10, -3, kMax, 1), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(pythonSlice(10, 8, 2, -2), (std::vector<int64_t>{8, 6, 4}));
  EXPECT_EQ(pythonSlice(10, -100, 3, 1), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(pythonSlice(10, 5, 5, 1), (std::vector<int64_t>{}));
}

HostTensor sliceRef(const HostTensor& x, const std::vector<int64_t>& starts,
                    const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                    const std::vector<int64_t>& steps) {
  const Shape& s = x.shape();
  std::vector<std::vector<int64_t>> picks;
  for (int64_t d : s) {
    std::vector<int64_t> all(static_cast<size_t>(d));
    std::iota(all.begin(), all.end(), 0);
    picks.push_back(all);
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(s.size()) : axes[i];
    picks[static_cast<size_t>(a)] =
        pythonSlice(s[static_cast<size_t>(a)], starts[i], ends[i], steps[i]);
  }
  Shape os;
  for (const auto& p : picks) os.push_back(static_cast<int64_t>(p.size()));
  HostTensor y(TensorInfo(x.dataType(), os));
  const auto st = stridesOf(s);
  for (int64_t o = 0; o < y.nelms(); ++o) {
    const auto idx = unravel(o, os);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += picks[d][static_cast<size_t>(idx[d])] * st[d];
    y.setFromDouble(o, x.getAsDouble(off));
  }
  return y;
}

struct SliceCase {
  std::vector<int64_t> starts, ends, axes, steps;
};

const std::vector<SliceCase>& sliceCases() {
  static const std::vector<SliceCase> cases = {
      {{1}, {3}, {0}, {1}},
      {{0, 1}, {kMax, -1}, {1, 2}, {1, 1}},
      {{-2}, {kMax}, {-1}, {1}},
      {{kMax}, {kMin}, {2}, {-1}},
      {{3, -1}, {0, -100}, {1, 2}, {-2, -3}},
      {{-100, 1}, {100, 100}, {0, 2}, {2, 3}},
      {{2}, {1}, {1}, {1}},  // empty
      {{0, 0, 0}, {1, 4, 5}, {0, 1, 2}, {1, 2, 2}},
      {{1}, {kMax}, {2}, {1}},
  };
  return cases;
}

TEST(SliceOp, MatchesReferenceForNegativeClampedAndReversedRanges) {
  auto x = iota({3, 4, 5});
  for (const auto& c : sliceCases()) {
    auto out = runForward(
        [&c](ir::Graph& g, auto in) {
          return addOp(g, "Slice",
                       {in[0], addConstInts(g, "starts", c.starts), addConstInts(g, "ends", c.ends),
                        addConstInts(g, "axes", c.axes), addConstInts(g, "steps", c.steps)});
        },
        {x});
    EXPECT_TRUE(allClose(out[0], sliceRef(x, c.starts, c.ends, c.axes, c.steps), 0, 0))
        << "starts " << shapeToString(c.starts) << " ends " << shapeToString(c.ends) << " axes "
        << shapeToString(c.axes) << " steps " << shapeToString(c.steps);
  }
}

TEST(SliceOp, OptionalInputsInt32AndAttributeForm) {
  auto x = HostTensor::fromVector<int64_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Opset 10+ with only starts and ends (INT32): axes 0..n-1 and steps 1.
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        auto s = HostTensor::fromVector<int32_t>({2}, {0, 1});
        auto e = HostTensor::fromVector<int32_t>({2}, {1, 3});
        g.addTensor("s", s.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(s));
        g.addTensor("e", e.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(e));
        return addOp(g, "Slice", {in[0], "s", "e"});
      },
      {x});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{1, 2}));
  // Steps given, axes absent ("").
  auto out2 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Slice",
                     {in[0], addConstInts(g, "s", {0, -1}), addConstInts(g, "e", {2, kMin}), "",
                      addConstInts(g, "t", {1, -2})});
      },
      {x});
  EXPECT_EQ(out2[0].toVector<int64_t>(), (std::vector<int64_t>{3, 1, 7, 5}));
  // Opset 1-9 form: attributes.
  auto out3 = runForward(
      [](ir::Graph& g, auto in) {
        Attributes a = ints("starts", {1});
        a.set("ends", std::vector<int64_t>{kMax});
        a.set("axes", std::vector<int64_t>{1});
        return addOp(g, "Slice", in, a, 1, ir::kOnnxDomain, 9);
      },
      {x});
  EXPECT_EQ(out3[0].toVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 5, 6, 7}));
}

TEST(SliceOp, Gradient) {
  auto x = randomTensor({3, 4, 5}, 10);
  for (const auto& c : sliceCases()) {
    expectGradientsMatch(
        [&c](ir::Graph& g, auto in) {
          return addOp(g, "Slice",
                       {in[0], addConstInts(g, "starts", c.starts), addConstInts(g, "ends", c.ends),
                        addConstInts(g, "axes", c.axes), addConstInts(g, "steps", c.steps)});
        },
        {x});
  }
}

TEST(SliceOp, Errors) {
  auto slice = [](std::vector<int64_t> axes, std::vector<int64_t> steps) {
    runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Slice",
                       {in[0], addConstInts(g, "s", {0}), addConstInts(g, "e", {1}),
                        addConstInts(g, "a", axes), addConstInts(g, "t", steps)});
        },
        {iota({2, 3})});
  };
  expectError([&] { slice({0}, {0}); }, {"Slice", "op_under_test", "step 0"});
  expectError([&] { slice({2}, {1}); }, {"Slice", "axis 2", "out of range"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              g.addTensor("dyn", TensorInfo(DataType::INT64, {1}), ir::TensorKind::Stream);
              return addOp(g, "Slice", {in[0], "dyn", addConstInts(g, "e", {1})});
            },
            {iota({2, 3})});
      },
      {"Slice", "'dyn'", "constant"});
}

// -----------------------------------------------------------------------------------------------
// Expand

TEST(ExpandOp, BroadcastsBothWaysWithGradient) {
  auto x = iota({3, 1});
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Expand", {in[0], addConstInts(g, "shape", {2, 1, 4})});
      },
      {x});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < out[0].nelms(); ++i) {
    EXPECT_EQ(out[0].span<float>()[static_cast<size_t>(i)], static_cast<float>((i / 4) % 3));
  }
  auto i64 = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Expand", {in[0], addConstInts(g, "shape", {2, 2})});
      },
      {HostTensor::fromVector<int64_t>({2}, {kMax, 5})});
  EXPECT_EQ(i64[0].toVector<int64_t>(), (std::vector<int64_t>{kMax, 5, kMax, 5}));
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Expand", {in[0], addConstInts(g, "shape", {2, 3, 1})});
      },
      {randomTensor({3, 2}, 11)});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Expand", {in[0], addConstInts(g, "shape", {4})});
            },
            {iota({3})});
      },
      {"Expand", "[3]", "[4]"});
}

}  // namespace
}  // namespace xtrain::testing
