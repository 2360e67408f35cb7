#include <gtest/gtest.h>

#include "ir/autodiff/autodiff.hpp"
#include "testing/op_testing.hpp"
#include "xtrain/device_program_error.hpp"

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

// PopART's one mixed-precision Mul: FLOAT16 times a one-element FLOAT (either side) is FLOAT16,
// the product rounded once; the FLOAT input's gradient stays FLOAT. Other mixes are refused.
TEST(BinaryOps, MulOfHalfAndFloatScalar) {
  const HostTensor h = randomTensor({2, 3}, 31).castTo(DataType::FLOAT16);
  const HostTensor s = HostTensor::fromVector<float>({1}, {0.3f});
  const BuildFn mul = [](ir::Graph& g, auto in) { return addOp(g, "Mul", in); };
  for (bool halfFirst : {true, false}) {
    auto out = runForward(mul, halfFirst ? std::vector<HostTensor>{h, s}
                                         : std::vector<HostTensor>{s, h});
    ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
    EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
    for (int64_t i = 0; i < 6; ++i) {
      const float ref = halfToFloat(floatToHalf(static_cast<float>(h.getAsDouble(i)) * 0.3f));
      EXPECT_EQ(out[0].getAsDouble(i), ref) << i;
    }
  }
  // The gradients, computed in FLOAT on the FLOAT twin of the graph's inputs.
  const HostTensor hf = h.castTo(DataType::FLOAT);
  GradCheckOptions opts;
  opts.atol = 2e-2;
  opts.rtol = 2e-2;
  expectGradientsMatch(mul, {hf, s}, opts);
  ir::Graph g;
  g.addTensor("h", h.info(), ir::TensorKind::Stream);
  g.addTensor("s", s.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(s));
  const TensorId y = addOp(g, "Mul", {"h", "s"})[0];
  Attributes r;
  r.set("shape", Shape{});
  const TensorId l = addOp(g, "ReduceSumToShape", {y}, r, 1, ir::kXtrainDomain)[0];
  const auto grads = ir::autodiff(g, l, {"s"});
  EXPECT_EQ(g.tensor(grads.at("s")).info, s.info());
  expectError([&] { runForward(mul, {h, HostTensor::fromVector<float>({2}, {1, 2})}); },
              {"Mul", "incompatible types FLOAT16 and FLOAT"});
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

// 8-bit operands pass shape inference (PopART's IR takes them: 8-bit host streams) and the kernel,
// which has no 8-bit form, refuses them with device_program_error (Poplar's compile failure in
// PopART), naming the op and the type. Other types are still refused by the IR.
TEST(BinaryOps, EightBitOperandsAreRefusedByTheKernelNotTheIr) {
  for (DataType t : {DataType::INT8, DataType::UINT8}) {
    SCOPED_TRACE(dataTypeName(t));
    ir::Graph g;
    g.addTensor("a", TensorInfo(t, {2}), ir::TensorKind::Stream);
    g.addTensor("b", TensorInfo(t, {2}), ir::TensorKind::Stream);
    const TensorId out = addOp(g, "Add", {"a", "b"}).at(0);
    EXPECT_EQ(g.tensor(out).info, TensorInfo(t, {2}));
    const HostTensor a(TensorInfo(t, {2}));
    try {
      runForward([](ir::Graph& gr, auto in) { return addOp(gr, "Add", in); }, {a, a});
      FAIL() << "expected device_program_error";
    } catch (const device_program_error& e) {
      EXPECT_NE(std::string(e.what()).find("Add"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dataTypeName(t)), std::string::npos) << e.what();
    }
  }
  const HostTensor b(TensorInfo(DataType::BOOL, {2}));
  try {
    runForward([](ir::Graph& gr, auto in) { return addOp(gr, "Add", in); }, {b, b});
    FAIL() << "expected an error";
  } catch (const device_program_error& e) {
    FAIL() << "BOOL should be refused by the IR: " << e.what();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("inputs are BOOL"), std::string::npos) << e.what();
  }
}

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
