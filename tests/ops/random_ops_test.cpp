// ai.onnx RandomNormal, RandomUniform and their Like forms, and ai.graphcore ShapedDropout: the
// draws' distribution, reproducibility from the seed, independence of ops and seeds, the Like
// forms' rewriting, ShapedDropout's broadcast mask and its gradient, and the errors PopART gives.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/autodiff/autodiff.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Builds ops on an empty graph (plus input "x" when given), runs the forward phase with `seed`
// and returns the values of `outs`.
std::vector<HostTensor> runSeeded(const std::function<std::vector<TensorId>(ir::Graph&)>& build,
                                  uint64_t seed, const HostTensor* x = nullptr) {
  ir::Graph g;
  if (x != nullptr) {
    g.addTensor("x", x->info(), ir::TensorKind::Const, std::make_shared<HostTensor>(*x));
  }
  auto outs = build(g);
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, seed);
  std::vector<HostTensor> r;
  for (const auto& o : outs) r.push_back(buffers[static_cast<size_t>(lowered.bufferIndex(o))]);
  return r;
}

std::vector<TensorId> randomOp(ir::Graph& g, const std::string& type, Attributes a,
                               std::vector<TensorId> in = {}) {
  return addOp(g, type, std::move(in), std::move(a), 1, ir::kOnnxDomain, 11);
}

struct Moments {
  double mean = 0, sd = 0, min = 1e300, max = -1e300;
};

Moments moments(const HostTensor& t) {
  Moments m;
  const auto n = static_cast<double>(t.nelms());
  for (int64_t i = 0; i < t.nelms(); ++i) {
    const double v = t.getAsDouble(i);
    m.mean += v / n;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  for (int64_t i = 0; i < t.nelms(); ++i) {
    const double d = t.getAsDouble(i) - m.mean;
    m.sd += d * d / (n - 1);
  }
  m.sd = std::sqrt(m.sd);
  return m;
}

TEST(RandomOps, UniformLiesInItsRangeWithTheRightMoments) {
  auto out = runSeeded(
      [](ir::Graph& g) {
        return randomOp(
            g, "RandomUniform",
            attrs({{"shape", std::vector<int64_t>{200, 500}}, {"low", -1.0f}, {"high", 3.0f}}));
      },
      5);
  ASSERT_EQ(out[0].info(), TensorInfo(DataType::FLOAT, {200, 500}));
  const Moments m = moments(out[0]);
  EXPECT_GE(m.min, -1.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_NEAR(m.mean, 1.0, 0.02);
  EXPECT_NEAR(m.sd, 4.0 / std::sqrt(12.0), 0.02);
}

TEST(RandomOps, NormalHasTheRightMomentsAndShape) {
  auto out = runSeeded(
      [](ir::Graph& g) {
        return randomOp(
            g, "RandomNormal",
            attrs({{"shape", std::vector<int64_t>{100001}}, {"mean", 1.0f}, {"scale", 2.0f}}));
      },
      6);
  const Moments m = moments(out[0]);
  EXPECT_NEAR(m.mean, 1.0, 0.03);
  EXPECT_NEAR(m.sd, 2.0, 0.03);
  // About 68.3% within one standard deviation, 95.4% within two.
  int64_t one = 0, two = 0;
  for (int64_t i = 0; i < out[0].nelms(); ++i) {
    const double z = std::abs(out[0].getAsDouble(i) - 1.0) / 2.0;
    one += z < 1.0;
    two += z < 2.0;
  }
  EXPECT_NEAR(static_cast<double>(one) / 100001.0, 0.6827, 0.01);
  EXPECT_NEAR(static_cast<double>(two) / 100001.0, 0.9545, 0.01);
}

TEST(RandomOps, SeedsReproduceAndOpsDrawIndependently) {
  auto twoOps = [](ir::Graph& g) {
    const Attributes a = attrs({{"shape", std::vector<int64_t>{64}}});
    auto a1 = randomOp(g, "RandomNormal", a);
    auto a2 = randomOp(g, "RandomNormal", a);
    return std::vector<TensorId>{a1[0], a2[0]};
  };
  auto first = runSeeded(twoOps, 11);
  auto again = runSeeded(twoOps, 11);
  auto other = runSeeded(twoOps, 12);
  EXPECT_TRUE(allClose(first[0], again[0], 0, 0));
  EXPECT_TRUE(allClose(first[1], again[1], 0, 0));
  EXPECT_FALSE(allClose(first[0], first[1], 0, 0.1));
  EXPECT_FALSE(allClose(first[0], other[0], 0, 0.1));
}

TEST(RandomOps, Float16AndLikeFormsTakeShapeAndType) {
  HostTensor x(TensorInfo(DataType::FLOAT16, {3, 4}));
  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Stream);
  auto like = randomOp(g, "RandomUniformLike", {}, {"x"});
  const ir::Op& op = g.op(g.tensor(like[0]).producer);
  // PopART's pattern replaces the Like op by the plain one, which no longer reads its input.
  EXPECT_EQ(op.type, "RandomUniform");
  EXPECT_TRUE(op.inputs.empty());
  EXPECT_EQ(g.tensor(like[0]).info, x.info());
  auto typed = randomOp(g, "RandomNormalLike", attrs({{"dtype", int64_t{1}}}), {"x"});
  EXPECT_EQ(g.tensor(typed[0]).info, TensorInfo(DataType::FLOAT, {3, 4}));
  auto out = runSeeded(
      [](ir::Graph& graph) {
        return randomOp(graph, "RandomUniform",
                        attrs({{"shape", std::vector<int64_t>{1000}},
                               {"dtype", int64_t{10}},
                               {"low", 2.0f},
                               {"high", 4.0f}}));
      },
      3);
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  const Moments m = moments(out[0]);
  EXPECT_GE(m.min, 2.0);
  EXPECT_LE(m.max, 4.0);
  EXPECT_NEAR(m.mean, 3.0, 0.1);
}

TEST(RandomOps, ErrorsArePopARTs) {
  ir::Graph g;
  g.addTensor("i", TensorInfo(DataType::INT32, {2}), ir::TensorKind::Stream);
  expectError(
      [&] {
        randomOp(g, "RandomNormal", attrs({{"shape", std::vector<int64_t>{2}}, {"seed", 1.0f}}));
      },
      {"RandomNormal",
       "Optional seed attribute is not supported. Use session::setRandomSeed instead."});
  expectError(
      [&] {
        randomOp(g, "RandomUniform",
                 attrs({{"shape", std::vector<int64_t>{2}}, {"dtype", int64_t{11}}}));
      },
      {"RandomUniform", "The data type DOUBLE is not supported in Poplar"});
  expectError([&] { randomOp(g, "RandomUniformLike", {}, {"i"}); },
              {"RandomUniformLike", "Unsupported data type requested: INT32"});
  expectError([&] { randomOp(g, "RandomNormal", {}); }, {"RandomNormal", "'shape' is required"});
}

// ---- ShapedDropout
// ---------------------------------------------------------------------------------

BuildFn shapedDropout(std::vector<int64_t> shape, float ratio, int numOutputs = 2,
                      int64_t training = 1) {
  return [=](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "ShapedDropout", in,
                 attrs({{"shape", shape}, {"ratio", ratio}, {"training_mode", training}}),
                 numOutputs, ir::kGraphcoreDomain, 1);
  };
}

// y[i, j] against the mask broadcast by plain indexing: mask of shape [rows, 1] or [1, cols].
void expectMaskApplied(const HostTensor& x, const HostTensor& y, const HostTensor& mask,
                       bool byRows, float ratio) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const bool keep = mask.getAsDouble(byRows ? r : c) != 0;
      const double want = keep ? x.getAsDouble(r * cols + c) / (1.0 - ratio) : 0.0;
      EXPECT_NEAR(y.getAsDouble(r * cols + c), want, 1e-5) << r << "," << c;
    }
  }
}

TEST(ShapedDropoutOp, DropsWholeSlicesAndScalesTheRest) {
  const HostTensor x = randomTensor({400, 3}, 51, 0.5f, 1.5f);
  auto rows = runForward(shapedDropout({400, 1}, 0.3f), {x});
  ASSERT_EQ(rows[1].info(), TensorInfo(DataType::BOOL, {400, 1}));
  expectMaskApplied(x, rows[0], rows[1], true, 0.3f);
  int64_t dropped = 0;
  for (int64_t r = 0; r < 400; ++r) dropped += rows[1].getAsDouble(r) == 0;
  EXPECT_NEAR(static_cast<double>(dropped) / 400.0, 0.3, 0.08);
  // A lower-rank shape broadcasts over the leading axes: whole columns.
  auto cols = runForward(shapedDropout({3}, 0.5f), {randomTensor({2, 3}, 52)});
  EXPECT_EQ(cols[1].shape(), Shape{3});
  // Not training: the identity.
  auto idle = runForward(shapedDropout({400, 1}, 0.3f, 1, 0), {x});
  EXPECT_TRUE(allClose(idle[0], x, 0, 0));
}

TEST(ShapedDropoutOp, GradientUsesTheForwardMask) {
  const HostTensor x = randomTensor({6, 8}, 53, 0.5f, 1.5f);
  const float ratio = 0.5f;
  for (int numOutputs : {1, 2}) {
    ir::Graph g;
    g.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
    auto outs = shapedDropout({1, 8}, ratio, numOutputs)(g, {"x"});
    Attributes a;
    a.set("shape", std::vector<int64_t>{});
    auto loss = addOp(g, "ReduceSumToShape", {outs[0]}, a, 1, ir::kXtrainDomain);
    auto grads = ir::autodiff(g, loss[0], {"x"});
    session::LoweredGraph lowered(g);
    auto buffers = lowered.makeBuffers();
    lowered.run(ir::Phase::Forward, buffers, 9);
    lowered.run(ir::Phase::Backward, buffers, 9);
    const HostTensor& y = buffers[static_cast<size_t>(lowered.bufferIndex(outs[0]))];
    const HostTensor& dx = buffers[static_cast<size_t>(lowered.bufferIndex(grads.at("x")))];
    // d sum(y) / dx = mask / (1 - ratio): nonzero exactly where y is (x is never 0).
    for (int64_t i = 0; i < x.nelms(); ++i) {
      const double want = y.getAsDouble(i) != 0 ? 1.0 / (1.0 - ratio) : 0.0;
      EXPECT_NEAR(dx.getAsDouble(i), want, 1e-6) << numOutputs << " " << i;
    }
  }
  expectGradientsMatch(shapedDropout({6, 1}, ratio, 1), {x});
}

TEST(ShapedDropoutOp, ErrorsArePopARTs) {
  const HostTensor x = randomTensor({2, 2}, 54);
  expectError(
      [&] {
        runForward(shapedDropout({2, 2}, 1.5f), {x});
      },
      {"ShapedDropout",
       "ratio value 1.5 is not valid. Please use a value in the interval "
       "[0,1)"});
  try {
    runForward(shapedDropout({4, 4}, 0.5f), {x});
    ADD_FAILURE() << "expected an error";
  } catch (const error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("ShapedDropout: incompatible input tensor and dropout shape.", 0), 0u)
        << what;
    EXPECT_NE(what.find("[4,4]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace xtrain::testing
