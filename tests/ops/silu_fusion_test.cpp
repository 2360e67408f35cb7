// The SiLU fusion pass (src/ir/fusion/silu_fusion.hpp) on the graph torch.onnx writes for nn.SiLU,
// Mul(x, Sigmoid(x)) either way round: one Swish op whose results equal the unfused graph's to 1e-5
// relative, forward and gradient; a Sigmoid needed elsewhere, a Sigmoid of another tensor or a
// FLOAT16 graph stays as it is.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/autodiff/autodiff.hpp"
#include "ir/fusion/fusion.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// x * sigmoid(x) (sigmoidFirst: sigmoid(x) * x); returns {sigmoid, product}.
std::pair<TensorId, TensorId> buildSilu(ir::Graph& g, const TensorId& x, bool sigmoidFirst) {
  const TensorId s = addOp(g, "Sigmoid", {x})[0];
  const TensorId y =
      addOp(g, "Mul", sigmoidFirst ? std::vector<TensorId>{s, x} : std::vector<TensorId>{x, s})[0];
  return {s, y};
}

class SiluFusion : public ::testing::TestWithParam<bool> {};

TEST_P(SiluFusion, BecomesOneSwishOp) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {4, 6}), ir::TensorKind::Stream);
  const auto [s, y] = buildSilu(g, "x", GetParam());
  const TensorId z = addOp(g, "Relu", {y})[0];
  const ir::FusionReport report = ir::fuseGraph(g, {});
  EXPECT_EQ(report.silu, 1);
  EXPECT_EQ(report.gelu, 0);
  ASSERT_EQ(g.ops().size(), 2u);
  const auto schedule = g.schedule();
  const ir::Op& swish = g.op(schedule[0]);
  EXPECT_EQ(swish.type, "Swish");
  EXPECT_EQ(swish.domain, ir::kGraphcoreDomain);
  EXPECT_EQ(swish.inputs, std::vector<TensorId>{"x"});
  EXPECT_EQ(swish.outputs, std::vector<TensorId>{y});
  EXPECT_FALSE(g.hasTensor(s));
  EXPECT_EQ(g.op(schedule[1]).inputs, std::vector<TensorId>{y});
  EXPECT_EQ(g.tensor(z).producer, schedule[1]);
}

// The sigmoid read by another op, kept (an anchor) or a graph output: no fusion.
TEST_P(SiluFusion, NotFusedWhenTheSigmoidIsNeededElsewhere) {
  for (int how = 0; how < 3; ++how) {
    ir::Graph g;
    g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 3}), ir::TensorKind::Stream);
    const TensorId s = buildSilu(g, "x", GetParam()).first;
    std::set<TensorId> keep;
    if (how == 0) addOp(g, "Relu", {s});
    if (how == 1) keep.insert(s);
    if (how == 2) g.outputs().push_back(s);
    const size_t ops = g.ops().size();
    EXPECT_EQ(ir::fuseGraph(g, keep).silu, 0) << "way " << how;
    EXPECT_EQ(g.ops().size(), ops);
    EXPECT_TRUE(g.hasTensor(s));
  }
}

TEST(SiluFusionPass, OtherProductsStay) {
  // x * sigmoid(w) (a squeeze-and-excitation scale) and a broadcast x * sigmoid(v).
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 3}), ir::TensorKind::Stream);
  g.addTensor("w", TensorInfo(DataType::FLOAT, {2, 3}), ir::TensorKind::Stream);
  g.addTensor("v", TensorInfo(DataType::FLOAT, {3}), ir::TensorKind::Stream);
  addOp(g, "Mul", {"x", addOp(g, "Sigmoid", {"w"})[0]});
  addOp(g, "Mul", {"x", addOp(g, "Sigmoid", {"v"})[0]});
  addOp(g, "Mul", {"v", addOp(g, "Sigmoid", {"v"})[0]});
  EXPECT_EQ(ir::fuseGraph(g, {}).silu, 1) << "only v * sigmoid(v)";
  // FLOAT16: every intermediate is rounded, which one fused op would not do.
  ir::Graph h;
  h.addTensor("x", TensorInfo(DataType::FLOAT16, {2, 3}), ir::TensorKind::Stream);
  buildSilu(h, "x", false);
  EXPECT_EQ(ir::fuseGraph(h, {}).silu, 0);
}

BuildFn siluBuild(bool sigmoidFirst, bool fuse) {
  return [sigmoidFirst, fuse](ir::Graph& g, const std::vector<TensorId>& in) {
    const TensorId y = buildSilu(g, in[0], sigmoidFirst).second;
    if (fuse) {
      EXPECT_EQ(ir::fuseGraph(g, {}).silu, 1);
    }
    return std::vector<TensorId>{y};
  };
}

TEST_P(SiluFusion, FusedForwardMatchesUnfused) {
  for (const Shape& shape : {Shape{3, 7, 11}, Shape{}, Shape{0, 3}, Shape{1037}}) {
    const HostTensor x = randomTensor(shape, 5, -12.0f, 12.0f);
    const auto unfused = runForward(siluBuild(GetParam(), false), {x});
    const auto fused = runForward(siluBuild(GetParam(), true), {x});
    EXPECT_TRUE(allClose(fused[0], unfused[0], 1e-5, 1e-6)) << shapeToString(shape);
  }
}

// d/dx of sum(silu(x) * r) through the graph, fused or not.
HostTensor siluGradient(bool sigmoidFirst, bool fuse, const HostTensor& x) {
  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  const TensorId y = siluBuild(sigmoidFirst, fuse)(g, {"x"})[0];
  g.addTensor("r", x.info(), ir::TensorKind::Const,
              std::make_shared<HostTensor>(randomTensor(x.shape(), 9)));
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  const TensorId loss =
      addOp(g, "ReduceSumToShape", {addOp(g, "Mul", {y, "r"})[0]}, a, 1, ir::kXtrainDomain)[0];
  const auto grads = ir::autodiff(g, loss, {"x"});
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  return buffers[static_cast<size_t>(lowered.bufferIndex(grads.at("x")))];
}

TEST_P(SiluFusion, FusedGradientMatchesUnfused) {
  const HostTensor x = randomTensor({5, 203}, 3, -12.0f, 12.0f);
  EXPECT_TRUE(
      allClose(siluGradient(GetParam(), true, x), siluGradient(GetParam(), false, x), 1e-5, 1e-6));
}

TEST_P(SiluFusion, FusedGradientMatchesFiniteDifferences) {
  expectGradientsMatch(siluBuild(GetParam(), true), {randomTensor({3, 5}, 21, -3.0f, 3.0f)});
}

INSTANTIATE_TEST_SUITE_P(Orders, SiluFusion, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "SigmoidFirst" : "XFirst"; });

}  // namespace
}  // namespace xtrain::testing
