// ai.graphcore utility ops (Detach, Nop, Scale, ScaledAdd, the dynamic slice family, Init,
// PrintTensor, Remainder, Fmod, Reverse, Round, Abort): forward against double-precision loops,
// gradients against finite differences, error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/autodiff/autodiff.hpp"
#include "ir/op_registry.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

const std::string kGc = ir::kGraphcoreDomain;

std::vector<TensorId> gcOp(ir::Graph& g, const std::string& type, std::vector<TensorId> in,
                           Attributes a = {}, int numOutputs = 1) {
  return addOp(g, type, std::move(in), std::move(a), numOutputs, kGc);
}

BuildFn one(const std::string& type, Attributes a = {}) {
  return [type, a](ir::Graph& g, const std::vector<TensorId>& in) { return gcOp(g, type, in, a); };
}

// Row-major strides of a shape.
std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d > 1; --d) st[d - 2] = st[d - 1] * s[d - 1];
  return st;
}

// Multi-index of flat index i in shape s.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d > 0; --d) {
    idx[d - 1] = i % s[d - 1];
    i /= s[d - 1];
  }
  return idx;
}

// Element of broadcast input x (shape xs) at output multi-index idx.
double bcastAt(const HostTensor& x, const std::vector<int64_t>& idx) {
  const Shape& xs = x.shape();
  const auto st = stridesOf(xs);
  int64_t off = 0;
  const size_t lead = idx.size() - xs.size();
  for (size_t d = 0; d < xs.size(); ++d) off += (xs[d] == 1 ? 0 : idx[lead + d]) * st[d];
  return x.getAsDouble(off);
}

HostTensor binaryRef(const HostTensor& a, const HostTensor& b, const Shape& out,
                     const std::function<double(double, double)>& f) {
  HostTensor y(TensorInfo(DataType::FLOAT, out));
  for (int64_t i = 0; i < y.nelms(); ++i) {
    const auto idx = unravel(i, out);
    y.setFromDouble(i, f(bcastAt(a, idx), bcastAt(b, idx)));
  }
  return y;
}

// ---- Detach, Nop, Scale

TEST(GraphcoreOps, DetachAndNopPassThrough) {
  const HostTensor x = randomTensor({3, 4}, 1);
  for (const char* type : {"Detach", "Nop"}) {
    auto out = runForward(one(type), {x});
    EXPECT_TRUE(allClose(out[0], x, 0, 0)) << type;
  }
  const HostTensor xi = HostTensor::fromVector<int64_t>({3}, {4, -5, 6});
  EXPECT_EQ(runForward(one("Nop"), {xi})[0].toVector<int64_t>(), xi.toVector<int64_t>());
  expectGradientsMatch(one("Nop"), {x});
}

TEST(GraphcoreOps, DetachBlocksTheGradient) {
  // y = x * detach(x): dy/dx is detach(x) only, not 2x.
  ir::Graph g;
  const HostTensor xv = randomTensor({4}, 2);
  g.addTensor("x", xv.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(xv));
  const TensorId d = gcOp(g, "Detach", {"x"})[0];
  const TensorId y = addOp(g, "Mul", {"x", d})[0];
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  const TensorId loss = addOp(g, "ReduceSumToShape", {y}, a, 1, ir::kXtrainDomain)[0];
  auto grads = ir::autodiff(g, loss, {"x"});
  ASSERT_EQ(grads.count("x"), 1u);
  // The only contribution is Mul's gradient wrt its first input: gy * detach(x).
  const ir::Tensor& gx = g.tensor(grads.at("x"));
  const ir::Op& producer = g.op(gx.producer);
  EXPECT_EQ(producer.type, "Mul");

  // Only through Detach: x gets no gradient at all.
  ir::Graph g2;
  g2.addTensor("x", xv.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(xv));
  const TensorId d2 = gcOp(g2, "Detach", {"x"})[0];
  const TensorId l2 = addOp(g2, "ReduceSumToShape", {d2}, a, 1, ir::kXtrainDomain)[0];
  EXPECT_EQ(ir::autodiff(g2, l2, {"x"}).count("x"), 0u);
}

TEST(GraphcoreOps, Scale) {
  const HostTensor x = randomTensor({2, 5}, 3);
  auto out = runForward(one("Scale", attrs({{"scale", -2.5f}})), {x});
  HostTensor ref(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) ref.setFromDouble(i, -2.5 * x.getAsDouble(i));
  EXPECT_TRUE(allClose(out[0], ref));
  expectGradientsMatch(one("Scale", attrs({{"scale", 0.75f}})), {x});
  expectError([&] { runForward(one("Scale"), {x}); }, {"Scale", "'scale'"});
  expectError(
      [&] {
        runForward(one("Scale", attrs({{"scale", 1.5f}})),
                   {HostTensor::fromVector<int64_t>({1}, {1})});
      },
      {"Scale", "scale 1.5 is not an integer", "INT64"});
  expectError(
      [&] {
        runForward(one("Scale", attrs({{"scale", 1.0f}})), {HostTensor::fromVector<uint8_t>({1}, {1})});
      },
      {"Scale", "floating-point"});
}

// Integer Scale (as PopART's, whose device casts the scale to the tensor's type): x * scale,
// wrapping around like numpy's integers.
TEST(GraphcoreOps, ScaleOfIntegers) {
  const auto x32 = HostTensor::fromVector<int32_t>({4}, {2, -1, 0, 1 << 30});
  auto out = runForward(one("Scale", attrs({{"scale", -3.0f}})), {x32});
  EXPECT_EQ(out[0].toVector<int32_t>(),
            (std::vector<int32_t>{-6, 3, 0, static_cast<int32_t>(-3LL * (1 << 30) + (1LL << 32))}));
  const auto x64 = HostTensor::fromVector<int64_t>({2}, {5, -7});
  out = runForward(one("Scale", attrs({{"scale", 2.0f}})), {x64});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{10, -14}));
}

// ---- ScaledAdd

TEST(GraphcoreOps, ScaledAddWithAttributes) {
  const HostTensor a = randomTensor({2, 3, 4}, 4);
  const HostTensor b = randomTensor({3, 1}, 5);
  const auto f = one("ScaledAdd", attrs({{"scale0", 0.5f}, {"scale1", -3.0f}}));
  auto out = runForward(f, {a, b});
  EXPECT_TRUE(allClose(
      out[0], binaryRef(a, b, {2, 3, 4}, [](double p, double q) { return 0.5 * p - 3.0 * q; })));
  expectGradientsMatch(f, {a, b});
  // Same shapes (the contiguous path); defaults are 1.
  const HostTensor c = randomTensor({2, 3, 4}, 6);
  out = runForward(one("ScaledAdd"), {a, c});
  EXPECT_TRUE(allClose(out[0], binaryRef(a, c, {2, 3, 4}, std::plus<double>())));
}

TEST(GraphcoreOps, ScaledAddWithScaleTensors) {
  const HostTensor a = randomTensor({3, 4}, 7);
  const HostTensor b = randomTensor({3, 4}, 8);
  const HostTensor s0 = HostTensor::scalar(1.5f);
  const HostTensor s1 = HostTensor::fromVector<float>({1}, {-0.25f});
  auto out = runForward(one("ScaledAdd"), {a, b, s0, s1});
  EXPECT_TRUE(allClose(
      out[0], binaryRef(a, b, {3, 4}, [](double p, double q) { return 1.5 * p - 0.25 * q; })));
  // Gradients of the terms and of both scales.
  expectGradientsMatch(one("ScaledAdd"), {a, b, s0, s1});
  // A constant scale becomes the attribute.
  ir::Graph g;
  g.addTensor("a", a.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(a));
  g.addTensor("b", b.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(b));
  g.addTensor("s", s0.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(s0));
  const ir::Op& op = g.op(g.tensor(gcOp(g, "ScaledAdd", {"a", "b", "s"})[0]).producer);
  EXPECT_FALSE(op.hasInput(2));
  EXPECT_FLOAT_EQ(op.attrs.getFloat("scale0"), 1.5f);
  expectError(
      [&] {
        runForward(one("ScaledAdd"), {a, b, randomTensor({2}, 9)});
      },
      {"ScaledAdd", "scale0", "scalar"});
  expectError([&] { runForward(one("ScaledAdd"), {a, randomTensor({2, 4}, 9)}); }, {"ScaledAdd"});
}

// ---- Dynamic slice family

struct DynCase {
  Shape shape;
  std::vector<int64_t> axes;
  std::vector<int64_t> sizes;
  std::vector<int64_t> offsets;
};

// The clamped start of every axis of the tensor.
std::vector<int64_t> starts(const DynCase& c) {
  std::vector<int64_t> s(c.shape.size(), 0);
  for (size_t i = 0; i < c.axes.size(); ++i) {
    const auto a =
        static_cast<size_t>(c.axes[i] < 0 ? c.axes[i] + int64_t(c.shape.size()) : c.axes[i]);
    s[a] = std::clamp<int64_t>(c.offsets[i], 0, c.shape[a] - c.sizes[i]);
  }
  return s;
}

Shape sliceShape(const DynCase& c) {
  Shape s = c.shape;
  for (size_t i = 0; i < c.axes.size(); ++i) {
    s[static_cast<size_t>(c.axes[i] < 0 ? c.axes[i] + int64_t(c.shape.size()) : c.axes[i])] =
        c.sizes[i];
  }
  return s;
}

// Flat index in the tensor of slice element j.
int64_t tensorIndexOf(const DynCase& c, int64_t j) {
  const auto idx = unravel(j, sliceShape(c));
  const auto st = stridesOf(c.shape);
  const auto s0 = starts(c);
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] + s0[d]) * st[d];
  return off;
}

std::vector<DynCase> dynCases() {
  return {
      {{4, 5, 6}, {1}, {2}, {1}},
      {{4, 5, 6}, {0, 2}, {2, 3}, {1, 2}},
      {{4, 5, 6}, {2}, {6}, {0}},              // a whole axis: one contiguous block
      {{4, 5, 6}, {-1, 0}, {2, 1}, {99, -7}},  // out of range offsets are clamped
      {{7}, {0}, {3}, {5}},                    // 1-D, clamped to 4
      {{3, 4}, {1}, {0}, {2}},                 // empty slice
  };
}

Attributes dynAttrs(const DynCase& c) {
  return attrs({{"axes", c.axes}, {"sizes", c.sizes}});
}

HostTensor offsetTensor(const DynCase& c, DataType t) {
  HostTensor o(TensorInfo(t, {static_cast<int64_t>(c.offsets.size())}));
  for (size_t i = 0; i < c.offsets.size(); ++i) {
    // UINT32 cannot hold a negative offset: its case uses 0.
    const int64_t v = t == DataType::UINT32 ? std::max<int64_t>(c.offsets[i], 0) : c.offsets[i];
    o.setFromDouble(static_cast<int64_t>(i), static_cast<double>(v));
  }
  return o;
}

TEST(GraphcoreOps, DynamicSliceFamilyForward) {
  for (const DynCase& c : dynCases()) {
    for (DataType ot : {DataType::INT32, DataType::INT64}) {
      SCOPED_TRACE(shapeToString(c.shape) + " axes " + ::testing::PrintToString(c.axes));
      const HostTensor x = randomTensor(c.shape, 10);
      const HostTensor off = offsetTensor(c, ot);
      const Shape ss = sliceShape(c);
      const HostTensor s = randomTensor(ss, 11);
      const int64_t n = s.nelms();

      HostTensor slice(TensorInfo(DataType::FLOAT, ss));
      HostTensor updated = x, zeroed = x, added = x;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t t = tensorIndexOf(c, j);
        slice.setFromDouble(j, x.getAsDouble(t));
        updated.setFromDouble(t, s.getAsDouble(j));
        zeroed.setFromDouble(t, 0.0);
        added.setFromDouble(t, x.getAsDouble(t) + s.getAsDouble(j));
      }
      const Attributes a = dynAttrs(c);
      EXPECT_TRUE(allClose(runForward(one("DynamicSlice", a), {x, off})[0], slice, 0, 0));
      EXPECT_TRUE(allClose(runForward(one("DynamicUpdate", a), {x, off, s})[0], updated, 0, 0));
      EXPECT_TRUE(allClose(runForward(one("DynamicZero", a), {x, off})[0], zeroed, 0, 0));
      EXPECT_TRUE(allClose(runForward(one("DynamicAdd", a), {x, off, s})[0], added));
    }
  }
}

// PopART's three-input DynamicSlice (the third input only gives the output's shape, possibly
// without the window's leading dimensions of size 1) and a DynamicUpdate/DynamicAdd slice without
// them: the same elements as the two-input forms, gradients by finite differences.
TEST(GraphcoreOps, DynamicSliceIntoAGivenSliceTensor) {
  const HostTensor x = randomTensor({5, 4, 3}, 21);
  const HostTensor off = HostTensor::fromVector<int64_t>({1}, {2});
  const Attributes a = attrs({{"axes", std::vector<int64_t>{0}}, {"sizes", std::vector<int64_t>{1}}});
  HostTensor ref(TensorInfo(DataType::FLOAT, {4, 3}));
  for (int64_t j = 0; j < 12; ++j) ref.setFromDouble(j, x.getAsDouble(2 * 12 + j));
  for (const Shape& given : {Shape{4, 3}, Shape{1, 4, 3}}) {
    const HostTensor buf = randomTensor(given, 22);
    auto out = runForward(one("DynamicSlice", a), {x, off, buf});
    EXPECT_EQ(out[0].shape(), given);
    EXPECT_EQ(out[0].toVector<float>(), ref.toVector<float>());
    GradCheckOptions opts;
    opts.wrt = {0};
    expectGradientsMatch(one("DynamicSlice", a), {x, off, buf}, opts);
  }
  const HostTensor s = randomTensor({4, 3}, 23);
  HostTensor updated = x, added = x;
  for (int64_t j = 0; j < 12; ++j) {
    updated.setFromDouble(24 + j, s.getAsDouble(j));
    added.setFromDouble(24 + j, x.getAsDouble(24 + j) + s.getAsDouble(j));
  }
  EXPECT_TRUE(allClose(runForward(one("DynamicUpdate", a), {x, off, s})[0], updated, 0, 0));
  EXPECT_TRUE(allClose(runForward(one("DynamicAdd", a), {x, off, s})[0], added));
  expectGradientsMatch(one("DynamicUpdate", a), {x, off, s});
  expectGradientsMatch(one("DynamicAdd", a), {x, off, s});
  expectError([&] { runForward(one("DynamicSlice", a), {x, off, randomTensor({2, 6}, 24)}); },
              {"DynamicSlice", "input 2 (slice) has shape [2,6]", "[1,4,3]"});
  expectError([&] { runForward(one("DynamicUpdate", a), {x, off, randomTensor({3, 4}, 24)}); },
              {"DynamicUpdate", "input 2 (slice)", "[1,4,3]"});
}

TEST(GraphcoreOps, DynamicSliceOfIntegersWithUint32Offsets) {
  const DynCase c{{3, 4}, {1}, {2}, {1}};
  const HostTensor x =
      HostTensor::fromVector<int64_t>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto out = runForward(one("DynamicSlice", dynAttrs(c)), {x, offsetTensor(c, DataType::UINT32)});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{1, 2, 5, 6, 9, 10}));
}

TEST(GraphcoreOps, DynamicSliceFamilyGradients) {
  for (const DynCase& c : dynCases()) {
    if (sliceShape(c) == Shape{3, 0}) continue;
    SCOPED_TRACE(shapeToString(c.shape) + " axes " + ::testing::PrintToString(c.axes));
    const HostTensor x = randomTensor(c.shape, 12);
    const HostTensor off = offsetTensor(c, DataType::INT64);
    const HostTensor s = randomTensor(sliceShape(c), 13);
    const Attributes a = dynAttrs(c);
    expectGradientsMatch(one("DynamicSlice", a), {x, off});
    expectGradientsMatch(one("DynamicUpdate", a), {x, off, s});
    expectGradientsMatch(one("DynamicZero", a), {x, off});
    expectGradientsMatch(one("DynamicAdd", a), {x, off, s});
  }
}

TEST(GraphcoreOps, DynamicSliceErrors) {
  const HostTensor x = randomTensor({4, 5}, 14);
  const HostTensor off = HostTensor::fromVector<int32_t>({1}, {0});
  auto run = [&](Attributes a, const HostTensor& o) { runForward(one("DynamicSlice", a), {x, o}); };
  expectError(
      [&] {
        run(attrs({{"axes", std::vector<int64_t>{1}}, {"sizes", std::vector<int64_t>{6}}}), off);
      },
      {"DynamicSlice", "sizes[0] is 6", "axis 1 has 5"});
  expectError(
      [&] {
        run(attrs({{"axes", std::vector<int64_t>{2}}, {"sizes", std::vector<int64_t>{1}}}), off);
      },
      {"DynamicSlice", "axis"});
  expectError(
      [&] {
        run(attrs({{"axes", std::vector<int64_t>{0, 1}}, {"sizes", std::vector<int64_t>{1}}}), off);
      },
      {"DynamicSlice", "'axes' has 2 entries and 'sizes' 1"});
  expectError(
      [&] {
        run(attrs({{"axes", std::vector<int64_t>{0, -2}}, {"sizes", std::vector<int64_t>{1, 1}}}),
            HostTensor::fromVector<int32_t>({2}, {0, 0}));
      },
      {"DynamicSlice", "appears twice"});
  expectError(
      [&] {
        run(attrs({{"axes", std::vector<int64_t>{0}}, {"sizes", std::vector<int64_t>{1}}}),
            HostTensor::fromVector<int32_t>({2}, {0, 0}));
      },
      {"DynamicSlice", "offset", "1 offsets"});
  expectError(
      [&] {
        run(attrs({{"axes", std::vector<int64_t>{0}}, {"sizes", std::vector<int64_t>{1}}}),
            HostTensor::fromVector<uint8_t>({1}, {0}));
      },
      {"DynamicSlice", "offset", "UINT32, INT32 or INT64"});
  expectError(
      [&] {
        run(attrs({{"sizes", std::vector<int64_t>{1}}}), off);
      },
      {"DynamicSlice", "'axes'"});
  expectError(
      [&] {
        runForward(one("DynamicUpdate", attrs({{"axes", std::vector<int64_t>{0}},
                                               {"sizes", std::vector<int64_t>{2}}})),
                   {x, off, randomTensor({1, 5}, 15)});
      },
      {"DynamicUpdate", "slice", "[2,5]"});
}

// ---- Init

TEST(GraphcoreOps, InitIsZeros) {
  for (DataType t : {DataType::FLOAT, DataType::INT64, DataType::FLOAT16, DataType::BOOL}) {
    for (int64_t initType : {0, 1}) {
      auto out = runForward(
          [&](ir::Graph& g, const std::vector<TensorId>&) {
            return gcOp(g, "Init", {},
                        attrs({{"shape", std::vector<int64_t>{2, 3}},
                               {"data_type", static_cast<int64_t>(t)},
                               {"init_type", initType},
                               {"batch_axis", int64_t{0}}}));
          },
          {});
      ASSERT_EQ(out[0].info(), TensorInfo(t, {2, 3}));
      for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[0].getAsDouble(i), 0.0);
    }
  }
  auto init = [](Attributes a) {
    runForward([&](ir::Graph& g, const std::vector<TensorId>&) { return gcOp(g, "Init", {}, a); },
               {});
  };
  expectError(
      [&] {
        init(attrs({{"shape", std::vector<int64_t>{2}}, {"data_type", int64_t{17}}}));
      },
      {"Init", "data_type 17"});
  expectError(
      [&] {
        init(attrs({{"shape", std::vector<int64_t>{-1}}, {"data_type", int64_t{9}}}));
      },
      {"Init", "negative"});
  expectError([&] { init(attrs({{"data_type", int64_t{9}}})); }, {"Init", "'shape'"});
  expectError(
      [&] {
        init(attrs({{"shape", std::vector<int64_t>{2}},
                    {"data_type", int64_t{9}},
                    {"init_type", int64_t{4}}}));
      },
      {"Init", "init_type 4"});
}

// ---- PrintTensor

TEST(GraphcoreOps, PrintTensorWritesToStandardErrorAndPassesThrough) {
  ::testing::internal::CaptureStderr();
  const HostTensor x = HostTensor::fromVector<float>({2, 2}, {1.0f, -2.0f, 0.5f, 4.0f});
  auto out = runForward(one("PrintTensor", attrs({{"title", std::string("my tensor")}})), {x});
  EXPECT_TRUE(allClose(out[0], x, 0, 0));
  // Summarised: 20 elements > threshold 4, two edge items; integers aligned right.
  HostTensor big(TensorInfo(DataType::INT32, {20}));
  for (int64_t i = 0; i < 20; ++i) big.setFromDouble(i, static_cast<double>(i));
  runForward(one("PrintTensor", attrs({{"title", std::string("big")},
                                       {"summariseThreshold", int64_t{4}},
                                       {"edgeItems", int64_t{2}}})),
             {big});
  // Lines break at maxLineWidth; fixed format with 3 digits in all.
  HostTensor six(TensorInfo(DataType::FLOAT, {2, 3}));
  for (int64_t i = 0; i < 6; ++i) six.setFromDouble(i, static_cast<double>(i) * 2.5);
  runForward(one("PrintTensor", attrs({{"title", std::string("wrapped")},
                                       {"maxLineWidth", int64_t{27}},
                                       {"digits", int64_t{3}},
                                       {"floatFormat", int64_t{1}}})),
             {six});
  runForward(one("PrintTensor", attrs({{"title", std::string("ints")},
                                       {"separator", std::string(",")},
                                       {"openBracket", std::string("(")},
                                       {"closeBracket", std::string(")")}})),
             {HostTensor::fromVector<int64_t>({2}, {7, -18})});
  // Auto turns scientific for magnitudes below 1e-4.
  runForward(one("PrintTensor", attrs({{"title", std::string("tiny")}, {"digits", int64_t{3}}})),
             {HostTensor::fromVector<float>({2}, {1e-5f, 2.0f})});
  // The gradient is printed too (print_gradient defaults to 1).
  expectGradientsMatch(one("PrintTensor", attrs({{"title", std::string("g")}})), {x});
  const std::string text = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(text.find("my tensor: [[ 1.0000000 -2.0000000] [ 0.5000000  4.0000000]]\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("big: [ 0  1 ... 18 19]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g_gradient: "), std::string::npos) << text;
  EXPECT_NE(text.find("wrapped: [[ 0.0  2.5  5.0]\n [ 7.5 10.0 12.5]]\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("ints: (  7,-18)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tiny: [1.00e-05 2.00e+00]\n"), std::string::npos) << text;
}

TEST(GraphcoreOps, PrintTensorTitleDefaultsToTheTensorId) {
  ir::Graph g;
  const HostTensor x = randomTensor({2}, 16);
  g.addTensor("weights", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  const ir::Op& op = g.op(g.tensor(gcOp(g, "PrintTensor", {"weights"})[0]).producer);
  EXPECT_EQ(op.attrs.getString("title"), "weights");
  expectError(
      [&] {
        runForward(one("PrintTensor", attrs({{"floatFormat", int64_t{7}}})), {x});
      },
      {"PrintTensor", "floatFormat 7"});
}

// ---- Remainder, Fmod

TEST(GraphcoreOps, RemainderAndFmod) {
  const HostTensor a =
      HostTensor::fromVector<float>({2, 4}, {5.5f, -5.5f, 5.5f, -5.5f, 7, -7, 0.25f, 3});
  const HostTensor b = HostTensor::fromVector<float>({4}, {2, 2, -2, -2});
  auto rem = runForward(one("Remainder"), {a, b});
  auto fm = runForward(one("Fmod"), {a, b});
  EXPECT_TRUE(allClose(rem[0], binaryRef(a, b, {2, 4}, [](double p, double q) {
                         return p - std::floor(p / q) * q;
                       })));
  EXPECT_TRUE(
      allClose(fm[0], binaryRef(a, b, {2, 4}, [](double p, double q) { return std::fmod(p, q); })));
  EXPECT_FLOAT_EQ(rem[0].span<float>()[1], 0.5f);  // -5.5 % 2: the sign of the divisor
  EXPECT_FLOAT_EQ(fm[0].span<float>()[1], -1.5f);  // fmod(-5.5, 2): the sign of the dividend
  // Exactly C's fmod over a wide range of magnitudes (the kernel's fast path and its fallback),
  // infinities and signed zeros included.
  {
    std::vector<float> av, bv;
    const std::vector<float> mags = {0.0f, 1e-30f, 0.3f, 1.0f,  3.0f,    7.5f,
                                     1e3f, 1e7f,   3e9f, 1e30f, INFINITY};
    for (float p : mags) {
      for (float q : mags) {
        for (float sp : {1.0f, -1.0f}) {
          for (float sq : {1.0f, -1.0f}) {
            av.push_back(sp * p);
            bv.push_back(sq * q);
          }
        }
      }
    }
    const auto n = static_cast<int64_t>(av.size());
    const HostTensor wa = HostTensor::fromVector<float>({n}, av);
    const HostTensor wb = HostTensor::fromVector<float>({n}, bv);
    const auto f = runForward(one("Fmod"), {wa, wb})[0].toVector<float>();
    const auto r = runForward(one("Remainder"), {wa, wb})[0].toVector<float>();
    for (size_t i = 0; i < av.size(); ++i) {
      SCOPED_TRACE(::testing::PrintToString(av[i]) + " mod " + ::testing::PrintToString(bv[i]));
      const float e = std::fmod(av[i], bv[i]);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(f[i]));
        EXPECT_TRUE(std::isnan(r[i]));
        continue;
      }
      EXPECT_EQ(f[i], e);
      EXPECT_EQ(std::signbit(f[i]), std::signbit(e));
      const float er = (e != 0.0f && ((e < 0.0f) != (bv[i] < 0.0f))) ? e + bv[i] : e;
      EXPECT_EQ(r[i], er);
    }
  }
  // Division by zero gives NaN, no trap.
  auto z = runForward(one("Remainder"), {HostTensor::scalar(1.0f), HostTensor::scalar(0.0f)});
  EXPECT_TRUE(std::isnan(z[0].span<float>()[0]));
  z = runForward(one("Fmod"), {HostTensor::scalar(1.0f), HostTensor::scalar(0.0f)});
  EXPECT_TRUE(std::isnan(z[0].span<float>()[0]));

  // Gradients away from the jumps: a/b never near an integer.
  HostTensor ga = randomTensor({3, 4}, 17, 0.2f, 0.8f);
  HostTensor gb = HostTensor::fromVector<float>({4}, {1, -1, 1, -1});
  for (int64_t i = 0; i < ga.nelms(); ++i) {
    ga.setFromDouble(i, ga.getAsDouble(i) + static_cast<double>(i % 5) - 2.0);
  }
  expectGradientsMatch(one("Remainder"), {ga, gb});
  expectGradientsMatch(one("Fmod"), {ga, gb});
  expectError([&] { runForward(one("Fmod"), {a, randomTensor({3}, 1)}); }, {"Fmod"});
  expectError(
      [&] {
        runForward(one("Remainder"), {HostTensor::fromVector<int32_t>({1}, {1}), b});
      },
      {"Remainder", "one element type"});
  expectError(
      [&] {
        runForward(one("Remainder"), {HostTensor::fromVector<uint8_t>({1}, {1}), b});
      },
      {"Remainder", "INT32 or INT64"});
}

template <typename T>
void checkIntegerMod() {
  const T lo = std::numeric_limits<T>::min();
  const std::vector<T> av = {7, -7, 7, -7, 0, 5, lo, lo, 9, -9};
  const std::vector<T> bv = {3, 3, -3, -3, 4, 0, -1, 3, 1, 2};
  const auto n = static_cast<int64_t>(av.size());
  const HostTensor a = HostTensor::fromVector<T>({n}, av);
  const HostTensor b = HostTensor::fromVector<T>({n}, bv);
  const auto rem = runForward(one("Remainder"), {a, b})[0].template toVector<T>();
  const auto fm = runForward(one("Fmod"), {a, b})[0].template toVector<T>();
  for (size_t i = 0; i < av.size(); ++i) {
    SCOPED_TRACE(::testing::PrintToString(av[i]) + " % " + ::testing::PrintToString(bv[i]));
    // Reference in long double arithmetic: exact for these values; x % 0 and x % -1 are 0.
    const long double p = av[i], q = bv[i];
    long double f = 0, r = 0;
    if (bv[i] != 0) {
      f = p - std::trunc(p / q) * q;
      r = p - std::floor(p / q) * q;
    }
    EXPECT_EQ(static_cast<long double>(fm[i]), f);
    EXPECT_EQ(static_cast<long double>(rem[i]), r);
  }
  // Broadcasting.
  const HostTensor m = HostTensor::fromVector<T>({2, 1}, {5, -5});
  const HostTensor d = HostTensor::fromVector<T>({3}, {2, -3, 4});
  EXPECT_EQ(runForward(one("Remainder"), {m, d})[0].template toVector<T>(),
            (std::vector<T>{1, -1, 1, 1, -2, 3}));
}

TEST(GraphcoreOps, IntegerRemainderAndFmod) {
  checkIntegerMod<int32_t>();
  checkIntegerMod<int64_t>();
}

// ---- Reverse

TEST(GraphcoreOps, Reverse) {
  const Shape shape{3, 4, 5};
  const HostTensor x = randomTensor(shape, 18);
  const std::vector<std::vector<int64_t>> cases = {{}, {0}, {2}, {0, 2}, {1}, {0, 1, 2}};
  for (const auto& dims : cases) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    HostTensor ref(x.info());
    for (int64_t i = 0; i < x.nelms(); ++i) {
      auto idx = unravel(i, shape);
      for (int64_t d : dims) {
        const auto u = static_cast<size_t>(d);
        idx[u] = shape[u] - 1 - idx[u];
      }
      const auto st = stridesOf(shape);
      int64_t src = 0;
      for (size_t d = 0; d < 3; ++d) src += idx[d] * st[d];
      ref.setFromDouble(i, x.getAsDouble(src));
    }
    const auto f = one("Reverse", attrs({{"dimensions", dims}}));
    EXPECT_TRUE(allClose(runForward(f, {x})[0], ref, 0, 0));
    expectGradientsMatch(f, {x});
  }
  const HostTensor xi = HostTensor::fromVector<int64_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(runForward(one("Reverse", attrs({{"dimensions", std::vector<int64_t>{1}}})), {xi})[0]
                .toVector<int64_t>(),
            (std::vector<int64_t>{2, 1, 4, 3}));
  expectError(
      [&] {
        runForward(one("Reverse", attrs({{"dimensions", std::vector<int64_t>{3}}})), {x});
      },
      {"Reverse", "invalid dimension '3' for input tensor of rank 3"});
  // As PopART's: dimensions count from 0, negative ones are refused.
  expectError(
      [&] {
        runForward(one("Reverse", attrs({{"dimensions", std::vector<int64_t>{0, -1}}})), {x});
      },
      {"Reverse", "invalid dimension '-1'. Only positive dimensions are supported"});
  expectError(
      [&] {
        runForward(one("Reverse", attrs({{"dimensions", std::vector<int64_t>{1, 1}}})), {x});
      },
      {"Reverse", "Dimension 1 appears multiple times"});
}

// ---- Round

TEST(GraphcoreOps, RoundHalvesToEven) {
  const HostTensor x =
      HostTensor::fromVector<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 1.2f, -1.7f, 3.0f});
  auto out = runForward(one("Round"), {x});
  EXPECT_EQ(out[0].toVector<float>(),
            (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 1.0f, -2.0f, 3.0f}));
  // Zero gradient (finite differences away from the halves agree).
  HostTensor g = randomTensor({3, 4}, 19, -0.3f, 0.3f);
  for (int64_t i = 0; i < g.nelms(); ++i) g.setFromDouble(i, g.getAsDouble(i) + double(i - 5));
  expectGradientsMatch(one("Round"), {g});
}

// ---- Abort

TEST(GraphcoreOps, AbortFailsTheRunNamingTheOp) {
  const HostTensor x = randomTensor({2}, 20);
  auto build = [](bool withCondition) {
    return [withCondition](ir::Graph& g, const std::vector<TensorId>& in) {
      std::vector<TensorId> abortIn;
      if (withCondition) abortIn.push_back(in.at(1));
      gcOp(g, "Abort", abortIn, {}, 0);
      return gcOp(g, "Nop", {in.at(0)});
    };
  };
  expectError([&] { runForward(build(false), {x}); }, {"Abort 'op_under_test'", "aborted"});
  expectError(
      [&] {
        runForward(build(true), {x, HostTensor::fromVector<uint8_t>({}, {1})});
      },
      {"Abort", "aborted", "true condition"});
  HostTensor cond(TensorInfo(DataType::BOOL, {}));
  cond.fillZero();
  EXPECT_TRUE(allClose(runForward(build(true), {x, cond})[0], x, 0, 0));
  expectError(
      [&] {
        runForward(build(true), {x, HostTensor::fromVector<int32_t>({2}, {1, 1})});
      },
      {"Abort", "condition", "scalar"});
}

TEST(GraphcoreOps, Float16RunsPromoted) {
  const HostTensor x = randomTensor({4, 3}, 21).castTo(DataType::FLOAT16);
  auto out = runForward(one("Scale", attrs({{"scale", 2.0f}})), {x});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  for (int64_t i = 0; i < x.nelms(); ++i) EXPECT_EQ(out[0].getAsDouble(i), 2.0 * x.getAsDouble(i));
  const HostTensor off = HostTensor::fromVector<int64_t>({1}, {1});
  out = runForward(one("DynamicSlice", attrs({{"axes", std::vector<int64_t>{0}},
                                              {"sizes", std::vector<int64_t>{2}}})),
                   {x, off});
  ASSERT_EQ(out[0].info(), TensorInfo(DataType::FLOAT16, {2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[0].getAsDouble(i), x.getAsDouble(i + 3));
  // Remainder and ScaledAdd (with a FLOAT scale tensor) compute in FLOAT and round back.
  const HostTensor y = randomTensor({4, 3}, 22, 0.5f, 1.0f).castTo(DataType::FLOAT16);
  out = runForward(one("Remainder"), {x, y});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  for (int64_t i = 0; i < x.nelms(); ++i) {
    const double p = x.getAsDouble(i), q = y.getAsDouble(i);
    EXPECT_NEAR(out[0].getAsDouble(i), p - std::floor(p / q) * q, 2e-3);
  }
  out = runForward(one("ScaledAdd"), {x, y, HostTensor::scalar(2.0f)});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  for (int64_t i = 0; i < x.nelms(); ++i) {
    EXPECT_NEAR(out[0].getAsDouble(i), 2.0 * x.getAsDouble(i) + y.getAsDouble(i), 4e-3);
  }
}

}  // namespace
}  // namespace xtrain::testing
