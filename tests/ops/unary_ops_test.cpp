// Elementwise unary ops, Cast, Pow and Dropout: forward against std:: references, gradients against
// finite differences, error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "ir/autodiff/autodiff.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

using RefFn = std::function<double(double)>;

double geluRef(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

HostTensor applyRef(const HostTensor& x, const RefFn& f) {
  HostTensor y(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) y.setFromDouble(i, f(x.getAsDouble(i)));
  return y;
}

// Uniform magnitudes in [lo, hi) with random signs: keeps inputs away from Relu's kink at 0.
HostTensor awayFromZero(const Shape& shape, uint64_t seed, float lo = 0.1f, float hi = 1.5f) {
  HostTensor t = randomTensor(shape, seed, lo, hi);
  HostTensor sign = randomTensor(shape, seed + 1000);
  for (int64_t i = 0; i < t.nelms(); ++i) {
    if (sign.span<float>()[static_cast<size_t>(i)] < 0)
      t.span<float>()[static_cast<size_t>(i)] *= -1;
  }
  return t;
}

struct UnaryCase {
  std::string type;
  std::string domain;
  RefFn ref;
  float lo, hi;  // input range for the forward check and the gradient check
  bool signedAwayFromZero = false;
};

std::ostream& operator<<(std::ostream& os, const UnaryCase& c) {
  return os << c.type;
}

std::vector<UnaryCase> unaryCases() {
  return {
      {"Neg", ir::kOnnxDomain, [](double x) { return -x; }, -2, 2},
      {"Identity", ir::kOnnxDomain, [](double x) { return x; }, -2, 2},
      {"Exp", ir::kOnnxDomain, [](double x) { return std::exp(x); }, -2, 2},
      {"Log", ir::kOnnxDomain, [](double x) { return std::log(x); }, 0.2f, 3},
      {"Sqrt", ir::kOnnxDomain, [](double x) { return std::sqrt(x); }, 0.2f, 3},
      {"Relu", ir::kOnnxDomain, [](double x) { return x > 0 ? x : 0.0; }, 0.1f, 2, true},
      {"Sigmoid", ir::kOnnxDomain, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -4, 4},
      {"Tanh", ir::kOnnxDomain, [](double x) { return std::tanh(x); }, -2, 2},
      {"Gelu", ir::kGraphcoreDomain, geluRef, -3, 3},
  };
}

class UnaryOp : public ::testing::TestWithParam<UnaryCase> {
 protected:
  HostTensor input(const Shape& shape, uint64_t seed) const {
    const auto& c = GetParam();
    return c.signedAwayFromZero ? awayFromZero(shape, seed, c.lo, c.hi)
                                : randomTensor(shape, seed, c.lo, c.hi);
  }
  BuildFn build() const {
    const auto& c = GetParam();
    return [c](ir::Graph& g, auto in) { return addOp(g, c.type, in, {}, 1, c.domain); };
  }
};

TEST_P(UnaryOp, MatchesReference) {
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{}, Shape{0, 3}, Shape{1, 5}}) {
    const HostTensor x = input(shape, 11);
    auto out = runForward(build(), {x});
    EXPECT_TRUE(allClose(out[0], applyRef(x, GetParam().ref), 1e-5, 1e-6))
        << GetParam().type << " on " << shapeToString(shape);
  }
}

TEST_P(UnaryOp, GradientMatchesFiniteDifferences) {
  expectGradientsMatch(build(), {input({3, 5}, 21)});
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryOp, ::testing::ValuesIn(unaryCases()),
                         [](const auto& info) { return info.param.type; });

TEST(UnaryOps, ReluGradIsZeroForNegativeInputs) {
  auto x = HostTensor::fromVector<float>({4}, {-2, -0.5, 0.5, 2});
  auto y = runForward([](ir::Graph& g, auto in) { return addOp(g, "Relu", in); }, {x});
  EXPECT_TRUE(allClose(y[0], HostTensor::fromVector<float>({4}, {0, 0, 0.5, 2})));
  expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "Relu", in); }, {x});
}

TEST(UnaryOps, SigmoidIsStableForLargeInputs) {
  auto x = HostTensor::fromVector<float>({4}, {-200, -50, 50, 200});
  auto y = runForward([](ir::Graph& g, auto in) { return addOp(g, "Sigmoid", in); }, {x});
  EXPECT_TRUE(allClose(y[0], HostTensor::fromVector<float>({4}, {0, 0, 1, 1}), 1e-6, 1e-20));
}

TEST(UnaryOps, NegAndIdentityOnIntegers) {
  auto a = HostTensor::fromVector<int32_t>({3}, {1, -2, 3});
  auto b = HostTensor::fromVector<int64_t>({2, 2}, {5, -6, 0, 7});
  auto negA = runForward([](ir::Graph& g, auto in) { return addOp(g, "Neg", in); }, {a});
  EXPECT_EQ(negA[0].toVector<int32_t>(), (std::vector<int32_t>{-1, 2, -3}));
  auto negB = runForward([](ir::Graph& g, auto in) { return addOp(g, "Neg", in); }, {b});
  EXPECT_EQ(negB[0].toVector<int64_t>(), (std::vector<int64_t>{-5, 6, 0, -7}));
  auto idB = runForward([](ir::Graph& g, auto in) { return addOp(g, "Identity", in); }, {b});
  EXPECT_EQ(idB[0].toVector<int64_t>(), b.toVector<int64_t>());
}

TEST(UnaryOps, FloatOnlyOpsRejectIntegersNamingTheOp) {
  auto a = HostTensor::fromVector<int32_t>({3}, {1, 2, 3});
  expectError([&] { runForward([](ir::Graph& g, auto in) { return addOp(g, "Exp", in); }, {a}); },
              {"Exp", "INT32[3]", "floating-point"});
  auto d = HostTensor::fromVector<double>({2}, {1, 2});
  expectError([&] { runForward([](ir::Graph& g, auto in) { return addOp(g, "Tanh", in); }, {d}); },
              {"Tanh", "DOUBLE[2]", "FLOAT"});
  auto u = HostTensor::fromVector<uint8_t>({2}, {1, 2});
  expectError([&] { runForward([](ir::Graph& g, auto in) { return addOp(g, "Neg", in); }, {u}); },
              {"Neg", "UINT8"});
}

// ---- Cast
// ---------------------------------------------------------------------------------------------

Attributes castTo(DataType t) {
  Attributes a;
  a.set("to", static_cast<int64_t>(dataTypeToOnnx(t)));
  return a;
}

HostTensor runCast(const HostTensor& x, DataType to) {
  return runForward([to](ir::Graph& g, auto in) { return addOp(g, "Cast", in, castTo(to)); },
                    {x})[0];
}

TEST(CastOp, ConvertsBetweenEverySupportedPair) {
  const std::vector<DataType> types = {DataType::FLOAT, DataType::FLOAT16, DataType::DOUBLE,
                                       DataType::INT32, DataType::INT64,   DataType::BOOL,
                                       DataType::UINT8};
  // Values every type represents exactly (BOOL: only 0 and 1).
  const std::vector<double> values = {0, 1, 3, 7, 0, 250, 1, 42};
  for (DataType from : types) {
    HostTensor x(TensorInfo(from, {2, 4}));
    for (int64_t i = 0; i < 8; ++i) x.setFromDouble(i, values[static_cast<size_t>(i)]);
    for (DataType to : types) {
      HostTensor y = runCast(x, to);
      ASSERT_EQ(y.info(), TensorInfo(to, {2, 4}))
          << dataTypeName(from) << " -> " << dataTypeName(to);
      for (int64_t i = 0; i < 8; ++i) {
        const double v = x.getAsDouble(i);
        const double want = to == DataType::BOOL ? (v != 0 ? 1.0 : 0.0) : v;
        EXPECT_EQ(y.getAsDouble(i), want)
            << dataTypeName(from) << " -> " << dataTypeName(to) << " at " << i;
      }
    }
  }
}

TEST(CastOp, NarrowAndUnsignedIntegerTypesConvertBothWays) {
  // PopART's host streams and casts take INT8, UINT8, INT16, UINT16 and UINT32 too.
  const std::vector<DataType> types = {DataType::FLOAT,  DataType::FLOAT16, DataType::INT32,
                                       DataType::INT8,   DataType::UINT8,   DataType::INT16,
                                       DataType::UINT16, DataType::UINT32,  DataType::UINT64};
  const std::vector<double> values = {0, 1, 3, 7, 0, 100, 1, 42};
  for (DataType from : types) {
    HostTensor x(TensorInfo(from, {8}));
    for (int64_t i = 0; i < 8; ++i) x.setFromDouble(i, values[static_cast<size_t>(i)]);
    for (DataType to : types) {
      HostTensor y = runCast(x, to);
      ASSERT_EQ(y.info(), TensorInfo(to, {8})) << dataTypeName(from) << " -> " << dataTypeName(to);
      for (int64_t i = 0; i < 8; ++i) {
        EXPECT_EQ(y.getAsDouble(i), values[static_cast<size_t>(i)])
            << dataTypeName(from) << " -> " << dataTypeName(to) << " at " << i;
      }
    }
  }
  // Negative values, floats saturating into the narrow types, and integers wrapping as in C++
  // (and numpy's astype).
  auto f = HostTensor::fromVector<float>({4}, {-5.7f, 300.0f, -300.0f, 70000.0f});
  EXPECT_EQ(runCast(f, DataType::INT8).toVector<int8_t>(),
            (std::vector<int8_t>{-5, 127, -128, 127}));
  // (uint16_t storage reads back as FLOAT16 through toVector: compare values.)
  const auto values16 = [](const HostTensor& t) {
    std::vector<double> v;
    for (int64_t k = 0; k < t.nelms(); ++k) v.push_back(t.getAsDouble(k));
    return v;
  };
  EXPECT_EQ(values16(runCast(f, DataType::UINT16)), (std::vector<double>{0, 300, 0, 65535}));
  EXPECT_EQ(runCast(f, DataType::INT16).toVector<int16_t>(),
            (std::vector<int16_t>{-5, 300, -300, 32767}));
  auto i = HostTensor::fromVector<int32_t>({3}, {-1, 200, 65537});
  EXPECT_EQ(runCast(i, DataType::INT8).toVector<int8_t>(), (std::vector<int8_t>{-1, -56, 1}));
  EXPECT_EQ(values16(runCast(i, DataType::UINT16)), (std::vector<double>{65535, 200, 1}));
  auto s = HostTensor::fromVector<int8_t>({2}, {-128, 127});
  EXPECT_EQ(runCast(s, DataType::FLOAT).toVector<float>(), (std::vector<float>{-128, 127}));
}

TEST(CastOp, FloatToIntegerTruncatesAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = HostTensor::fromVector<float>({6}, {2.7f, -2.7f, 0.5f, 1e20f, -1e20f, nan});
  EXPECT_EQ(runCast(x, DataType::INT32).toVector<int32_t>(),
            (std::vector<int32_t>{2, -2, 0, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_EQ(runCast(x, DataType::INT64).toVector<int64_t>(),
            (std::vector<int64_t>{2, -2, 0, std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(), 0}));
  EXPECT_EQ(runCast(x, DataType::UINT8).toVector<uint8_t>(),
            (std::vector<uint8_t>{2, 0, 0, 255, 0, 0}));
  // Any non-zero value (NaN included) is true.
  EXPECT_EQ(runCast(x, DataType::BOOL).toVector<bool>(),
            (std::vector<bool>{true, true, true, true, true, true}));
}

TEST(CastOp, HalfRoundsToNearest) {
  auto x = HostTensor::fromVector<float>({3}, {1.0f, 1.0f + 1.0f / 4096, 65504.0f});
  HostTensor h = runCast(x, DataType::FLOAT16);
  EXPECT_EQ(h.getAsDouble(0), 1.0);
  EXPECT_EQ(h.getAsDouble(1), 1.0);  // below half an ulp (2^-11) of FLOAT16 at 1
  EXPECT_EQ(h.getAsDouble(2), 65504.0);
  EXPECT_TRUE(
      allClose(runCast(h, DataType::FLOAT), HostTensor::fromVector<float>({3}, {1, 1, 65504})));
}

TEST(CastOp, FloatToFloatGradientCastsBack) {
  auto x = randomTensor({2, 3}, 31);
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        auto d = addOp(g, "Cast", in, castTo(DataType::DOUBLE));
        return addOp(g, "Cast", d, castTo(DataType::FLOAT));
      },
      {x});
}

TEST(CastOp, IntegerCastCarriesNoGradient) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {3}), ir::TensorKind::Variable,
              std::make_shared<HostTensor>(randomTensor({3}, 1)));
  auto i = addOp(g, "Cast", {"x"}, castTo(DataType::INT32));
  auto f = addOp(g, "Cast", i, castTo(DataType::FLOAT));
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  auto loss = addOp(g, "ReduceSumToShape", f, a, 1, ir::kXtrainDomain);
  auto grads = ir::autodiff(g, loss[0], {"x"});
  EXPECT_EQ(grads.count("x"), 0u);
}

TEST(CastOp, ErrorsNameTheOp) {
  auto x = randomTensor({2}, 1);
  expectError([&] { runForward([](ir::Graph& g, auto in) { return addOp(g, "Cast", in); }, {x}); },
              {"Cast", "'to'"});
  Attributes bad;
  bad.set("to", int64_t{99});
  expectError(
      [&] { runForward([&](ir::Graph& g, auto in) { return addOp(g, "Cast", in, bad); }, {x}); },
      {"Cast", "99"});
  expectError([&] { runCast(x, DataType::BFLOAT16); }, {"Cast", "FLOAT to BFLOAT16"});
}

// ---- Pow
// ----------------------------------------------------------------------------------------------

HostTensor powRef(const HostTensor& a, const HostTensor& b, const Shape& out) {
  // Explicit index arithmetic for rank <= 2 operands broadcast to a rank-2 output.
  HostTensor y(TensorInfo(DataType::FLOAT, out));
  auto at = [](const HostTensor& t, int64_t r, int64_t c) {
    const Shape& s = t.shape();
    const int64_t rows = s.size() == 2 ? s[0] : 1;
    const int64_t cols = s.empty() ? 1 : s.back();
    return t.getAsDouble((rows == 1 ? 0 : r) * cols + (cols == 1 ? 0 : c));
  };
  for (int64_t r = 0; r < out[0]; ++r) {
    for (int64_t c = 0; c < out[1]; ++c)
      y.setFromDouble(r * out[1] + c, std::pow(at(a, r, c), at(b, r, c)));
  }
  return y;
}

TEST(PowOp, BroadcastsLikeNumpy) {
  auto a = randomTensor({2, 3}, 41, 0.5f, 2.0f);
  auto b = randomTensor({3}, 42, -2.0f, 3.0f);
  auto c = randomTensor({3, 1}, 43, 0.5f, 2.0f);
  auto d = randomTensor({1, 4}, 44, -2.0f, 3.0f);
  auto e = randomTensor({3}, 45, 0.5f, 2.0f);
  auto pow = [](ir::Graph& g, auto in) { return addOp(g, "Pow", in); };
  EXPECT_TRUE(allClose(runForward(pow, {a, b})[0], powRef(a, b, {2, 3}), 1e-5));
  EXPECT_TRUE(allClose(runForward(pow, {c, d})[0], powRef(c, d, {3, 4}), 1e-5));
  EXPECT_TRUE(allClose(runForward(pow, {e, a})[0], powRef(e, a, {2, 3}), 1e-5));
}

TEST(PowOp, ScalarAndIntegerExponents) {
  auto a = HostTensor::fromVector<float>({2, 2}, {-1.5f, 0, 2, 3});
  auto pow = [](ir::Graph& g, auto in) { return addOp(g, "Pow", in); };
  for (float e : {2.0f, 1.0f, 3.0f, 0.0f}) {
    auto out = runForward(pow, {a, HostTensor::scalar(e)});
    EXPECT_TRUE(allClose(out[0], powRef(a, HostTensor::scalar(e), {2, 2}))) << "exponent " << e;
  }
  auto i64 = HostTensor::fromVector<int64_t>({2}, {2, 3});
  EXPECT_TRUE(allClose(runForward(pow, {a, i64})[0],
                       HostTensor::fromVector<float>({2, 2}, {2.25f, 0, 4, 27})));
  auto i32 = HostTensor::fromVector<int32_t>({}, {-1});
  EXPECT_TRUE(allClose(runForward(pow, {HostTensor::fromVector<float>({2}, {2, 4}), i32})[0],
                       HostTensor::fromVector<float>({2}, {0.5f, 0.25f})));
}

TEST(PowOp, GradientsWithBroadcasting) {
  auto a = randomTensor({3, 4}, 51, 0.5f, 1.5f);
  auto b = randomTensor({4}, 52, -1.5f, 2.5f);
  auto c = randomTensor({3, 1}, 53, 0.5f, 1.5f);
  auto pow = [](ir::Graph& g, auto in) { return addOp(g, "Pow", in); };
  expectGradientsMatch(pow, {a, b});
  expectGradientsMatch(pow, {c, b});
  expectGradientsMatch(pow, {b, HostTensor::scalar(2.0f)}, {.wrt = {0}});
  // Integer exponent: only the base has a gradient.
  expectGradientsMatch(pow, {a, HostTensor::fromVector<int64_t>({4}, {0, 1, 2, 3})});
}

// Analytic gradients of sum(outputs[0] * projection) w.r.t. every floating input, plus the outputs.
struct Grads {
  std::vector<HostTensor> outputs;
  std::vector<HostTensor> grads;  // empty HostTensor when an input got no gradient
};

Grads runGradients(const BuildFn& build, const std::vector<HostTensor>& inputs,
                   const HostTensor& proj, uint64_t seed = 1) {
  ir::Graph g;
  std::vector<TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back("in" + std::to_string(i));
    g.addTensor(
        ids.back(), inputs[i].info(),
        isFloatingPoint(inputs[i].dataType()) ? ir::TensorKind::Variable : ir::TensorKind::Const,
        std::make_shared<HostTensor>(inputs[i]));
  }
  auto outs = build(g, ids);
  g.addTensor("proj", proj.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(proj));
  auto prod = addOp(g, "Mul", {outs[0], "proj"});
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  auto loss = addOp(g, "ReduceSumToShape", prod, a, 1, ir::kXtrainDomain);
  auto grads = ir::autodiff(g, loss[0], ids);
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, seed);
  lowered.run(ir::Phase::Backward, buffers, seed);
  Grads r;
  for (const auto& o : outs) {
    r.outputs.push_back(o.empty() ? HostTensor()
                                  : buffers[static_cast<size_t>(lowered.bufferIndex(o))]);
  }
  for (const auto& id : ids) {
    auto it = grads.find(id);
    r.grads.push_back(it == grads.end()
                          ? HostTensor()
                          : buffers[static_cast<size_t>(lowered.bufferIndex(it->second))]);
  }
  return r;
}

TEST(PowOp, ZeroBaseGradientsAreFinite) {
  auto a = HostTensor::fromVector<float>({4}, {0, 0, 0, 2});
  auto b = HostTensor::fromVector<float>({4}, {2, 1, 0, 0});
  auto r = runGradients([](ir::Graph& g, auto in) { return addOp(g, "Pow", in); }, {a, b},
                        HostTensor::fromVector<float>({4}, {1, 1, 1, 1}));
  // d/da a^b = b a^(b-1): 0 at (0, 2), 1 at (0, 1), 0 for b = 0.
  // d/db a^b = a^b log a, taken as 0 at a = 0 (as PyTorch does for b >= 0).
  EXPECT_TRUE(allClose(r.grads[0], HostTensor::fromVector<float>({4}, {0, 1, 0, 0})));
  EXPECT_TRUE(allClose(r.grads[1], HostTensor::fromVector<float>({4}, {0, 0, 0, std::log(2.0f)})));
}

// With a zero base and a negative or nan exponent, d/db a^b = a^b log a is what PyTorch gives:
// inf * -inf = -inf (times the gradient's sign), and nan for a nan exponent.
TEST(PowOp, ZeroBaseNegativeExponentGradientMatchesPyTorch) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = HostTensor::fromVector<float>({4}, {0, 0, 0, 0});
  auto b = HostTensor::fromVector<float>({4}, {-0.5f, -2, -inf, nan});
  auto r = runGradients([](ir::Graph& g, auto in) { return addOp(g, "Pow", in); }, {a, b},
                        HostTensor::fromVector<float>({4}, {1, -1, 1, 1}));
  const auto gb = r.grads[1].toVector<float>();
  EXPECT_EQ(gb[0], -inf);
  EXPECT_EQ(gb[1], inf);
  EXPECT_EQ(gb[2], -inf);
  EXPECT_TRUE(std::isnan(gb[3]));
}

// ---- Dropout
// ------------------------------------------------------------------------------------------

Attributes dropoutAttrs(float ratio, int64_t mode) {
  Attributes a;
  a.set("ratio", ratio);
  a.set("training_mode", mode);
  return a;
}

TEST(DropoutOp, InferenceModeIsIdentity) {
  auto x = randomTensor({3, 7}, 61);
  // Opset 13 without ratio / training_mode inputs: ONNX's default is inference.
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Dropout", in, {}, 2); }, {x});
  EXPECT_TRUE(allClose(out[0], x, 0, 0));
  EXPECT_EQ(out[1].info(), TensorInfo(DataType::BOOL, {3, 7}));
  for (int64_t i = 0; i < out[1].nelms(); ++i) EXPECT_EQ(out[1].getAsDouble(i), 1.0);
  expectGradientsMatch(
      [](ir::Graph& g, auto in) { return addOp(g, "Dropout", in, dropoutAttrs(0.5f, 0)); }, {x});
}

TEST(DropoutOp, CanonicalizesOpsetForms) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {4}), ir::TensorKind::Stream);
  g.addTensor("r", TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Const,
              std::make_shared<HostTensor>(HostTensor::scalar(0.3f)));
  HostTensor yes(TensorInfo(DataType::BOOL, {}));
  yes.setFromDouble(0, 1);
  g.addTensor("t", yes.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(yes));
  auto out12 = addOp(g, "Dropout", {"x", "r", "t"}, {}, 1, ir::kOnnxDomain, 12);
  const ir::Op& op12 = g.op(g.tensor(out12[0]).producer);
  EXPECT_EQ(op12.inputs, (std::vector<TensorId>{"x"}));
  EXPECT_FLOAT_EQ(op12.attrs.getFloat("ratio"), 0.3f);
  EXPECT_EQ(op12.attrs.getInt("training_mode"), 1);

  auto out12r = addOp(g, "Dropout", {"x", "r"}, {}, 1, ir::kOnnxDomain, 13);
  const ir::Op& op12r = g.op(g.tensor(out12r[0]).producer);
  EXPECT_EQ(op12r.attrs.getInt("training_mode"), 0);

  Attributes r11;
  r11.set("ratio", 0.2f);
  auto out11 = addOp(g, "Dropout", {"x"}, r11, 1, ir::kOnnxDomain, 11);
  const ir::Op& op11 = g.op(g.tensor(out11[0]).producer);
  EXPECT_FLOAT_EQ(op11.attrs.getFloat("ratio"), 0.2f);
  EXPECT_EQ(op11.attrs.getInt("training_mode"), 1);

  auto outDefault = addOp(g, "Dropout", {"x"}, {}, 1, ir::kOnnxDomain, 13);
  EXPECT_FLOAT_EQ(g.op(g.tensor(outDefault[0]).producer).attrs.getFloat("ratio"), 0.5f);
}

TEST(DropoutOp, TrainingDropsAboutRatioAndScalesSurvivors) {
  const int64_t n = 20001;  // odd: the last element uses a hash of its own
  auto x = randomTensor({n}, 62, 0.5f, 1.5f);
  for (float ratio : {0.1f, 0.25f, 0.5f, 0.9f}) {
    auto out = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, "Dropout", in, dropoutAttrs(ratio, 1), 2); },
        {x});
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double y = out[0].getAsDouble(i);
      const bool kept = out[1].getAsDouble(i) != 0;
      if (kept) {
        EXPECT_NEAR(y, x.getAsDouble(i) / (1.0 - ratio), 1e-5) << i;
      } else {
        EXPECT_EQ(y, 0.0) << i;
        ++dropped;
      }
    }
    // Binomial: std dev sqrt(n r (1-r)) <= 71 elements; allow ~5 sigma.
    EXPECT_NEAR(static_cast<double>(dropped) / n, ratio, 0.018) << "ratio " << ratio;
  }
}

TEST(DropoutOp, SameSeedSameMaskOtherSeedOtherMask) {
  auto x = randomTensor({64, 33}, 63, 0.5f, 1.5f);
  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  auto outs = addOp(g, "Dropout", {"x"}, dropoutAttrs(0.5f, 1), 2);
  session::LoweredGraph lowered(g);
  auto maskOf = [&](uint64_t seed) {
    auto buffers = lowered.makeBuffers();
    lowered.run(ir::Phase::Forward, buffers, seed);
    return buffers[static_cast<size_t>(lowered.bufferIndex(outs[1]))].toVector<bool>();
  };
  EXPECT_EQ(maskOf(5), maskOf(5));
  EXPECT_NE(maskOf(5), maskOf(6));
  // A second op in the same graph draws a different mask.
  ir::Graph g2;
  g2.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  auto first = addOp(g2, "Dropout", {"x"}, dropoutAttrs(0.5f, 1), 2);
  auto second = addOp(g2, "Dropout", {"x"}, dropoutAttrs(0.5f, 1), 2);
  session::LoweredGraph lowered2(g2);
  auto buffers = lowered2.makeBuffers();
  lowered2.run(ir::Phase::Forward, buffers, 5);
  EXPECT_NE(buffers[static_cast<size_t>(lowered2.bufferIndex(first[1]))].toVector<bool>(),
            buffers[static_cast<size_t>(lowered2.bufferIndex(second[1]))].toVector<bool>());
}

TEST(DropoutOp, GradientIsMaskTimesScaleTimesIncomingGradient) {
  auto x = randomTensor({5, 9}, 64, 0.5f, 1.5f);
  auto proj = randomTensor({5, 9}, 65);
  const float ratio = 0.4f;
  for (int numOutputs : {1, 2}) {
    auto r = runGradients(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Dropout", in, dropoutAttrs(ratio, 1), numOutputs);
        },
        {x}, proj);
    // x is never 0, so y != 0 exactly where the mask keeps the element.
    HostTensor want(x.info());
    int64_t kept = 0;
    for (int64_t i = 0; i < x.nelms(); ++i) {
      const bool keep = r.outputs[0].getAsDouble(i) != 0;
      if (numOutputs == 2) {
        EXPECT_EQ(keep, r.outputs[1].getAsDouble(i) != 0) << i;
      }
      kept += keep ? 1 : 0;
      want.setFromDouble(i, keep ? proj.getAsDouble(i) / (1.0 - ratio) : 0.0);
    }
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, x.nelms());
    ASSERT_FALSE(r.grads[0].info().shape().empty());
    EXPECT_TRUE(allClose(r.grads[0], want, 1e-5, 1e-6)) << numOutputs << " outputs";
  }
  // The forward pass redraws the same mask for the same seed, so finite differences see a linear
  // map.
  expectGradientsMatch(
      [&](ir::Graph& g, auto in) { return addOp(g, "Dropout", in, dropoutAttrs(ratio, 1)); }, {x});
}

TEST(DropoutOp, ErrorsNameTheOp) {
  auto x = randomTensor({4}, 66);
  for (float bad : {1.0f, 1.5f, -0.1f}) {
    expectError(
        [&] {
          runForward(
              [&](ir::Graph& g, auto in) { return addOp(g, "Dropout", in, dropoutAttrs(bad, 1)); },
              {x});
        },
        {"Dropout", "ratio", "[0, 1)"});
  }
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) { return addOp(g, "Dropout", in, dropoutAttrs(0.5f, 2)); },
            {x});
      },
      {"Dropout", "training_mode is 2"});
  // A ratio that is not a constant (here a Variable) cannot be moved into the attribute.
  expectError(
      [&] {
        runForward([](ir::Graph& g,
                      auto in) { return addOp(g, "Dropout", in, {}, 1, ir::kOnnxDomain, 12); },
                   {x, HostTensor::scalar(0.5f)});
      },
      {"Dropout", "is not a constant", "ratio"});
  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Stream);
  g.addTensor("r", TensorInfo(DataType::FLOAT, {2}), ir::TensorKind::Const,
              std::make_shared<HostTensor>(HostTensor::fromVector<float>({2}, {0.1f, 0.2f})));
  expectError(
      [&] {
        addOp(g, "Dropout", {"x", "r"}, {}, 1, ir::kOnnxDomain, 12);
      },
      {"Dropout", "expected a scalar"});
}

}  // namespace
}  // namespace xtrain::testing
