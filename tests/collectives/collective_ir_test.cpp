// The replicated collectives in the Builder, ONNX (schemas, checker, import) and the IR:
// attributes, shapes, gradient graphs and the errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/autodiff/autodiff.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "testing/op_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

using Op = CollectiveOperator;

const ir::Op& producer(const ir::Graph& g, const TensorId& id) {
  return g.op(g.tensor(id).producer);
}

// Builder -> ONNX (checked) -> IR: the attributes are the documented ones and both shape
// inferences agree.
TEST(CollectiveOps, BuilderEmitsCheckedNodesWithShapes) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2, 5}), "x");
  const TensorId ar =
      gc.replicatedallreduce({x}, Op::Mean, CommGroup(CommGroupType::Orthogonal, 2), "ar");
  const TensorId rs =
      gc.replicatedreducescatter({ar}, Op::Add, CommGroup(CommGroupType::Consecutive, 4), "rs");
  const TensorId ag = gc.replicatedallgather({rs}, ReplicaGrouping(8, 2, 2), "ag");
  const TensorId all = gc.replicatedallreduce({ag}, Op::Max, {}, "all");
  b->addOutputTensor(all);
  EXPECT_EQ(b->getTensorShape(ar), (Shape{2, 5}));
  EXPECT_EQ(b->getTensorShape(rs), (Shape{3}));  // ceil(10 / 4)
  EXPECT_EQ(b->getTensorShape(ag), (Shape{6}));
  EXPECT_EQ(b->getTensorShape(all), (Shape{6}));

  ir::OnnxModel m = ir::importOnnxModel(b->getModelProto());  // runs the ONNX checker
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(g.tensor(rs).info, TensorInfo(DataType::FLOAT, {3}));
  EXPECT_EQ(g.tensor(ag).info, TensorInfo(DataType::FLOAT, {6}));
  const ir::Op& arOp = producer(g, ar);
  EXPECT_EQ(arOp.domain, ir::kGraphcoreDomain);
  EXPECT_EQ(arOp.type, "ReplicatedAllReduce");
  EXPECT_EQ(arOp.attrs.getInt("op"), static_cast<int64_t>(Op::Mean));
  EXPECT_EQ(arOp.attrs.getInt("commGroupType"), static_cast<int64_t>(CommGroupType::Orthogonal));
  EXPECT_EQ(arOp.attrs.getInt("commGroupSize"), 2);
  EXPECT_EQ(arOp.attrs.getInt("groupSize"), 2);
  const ir::Op& agOp = producer(g, ag);
  EXPECT_EQ(agOp.attrs.getInt("replicaGroupingStride"), 2);
  EXPECT_EQ(agOp.attrs.getInt("replicaGroupingSize"), 2);
  EXPECT_FALSE(agOp.attrs.has("commGroupType"));
  // CommGroup All without a known replica count: no group size yet (an all-reduce needs none).
  EXPECT_FALSE(producer(g, all).attrs.has("groupSize"));
}

TEST(CollectiveOps, BuilderRefusesLocalAndSizelessGroups) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {4}), "x");
  expectError([&] { gc.replicatedallreduce({x}, Op::Local); },
              {"replicatedallreduce", "operator Local does not reduce"});
  expectError([&] { gc.replicatedreducescatter({x}, Op::Local); },
              {"replicatedreducescatter", "operator Local does not reduce"});
  expectError([&] { gc.replicatedallgather({x}, CommGroup(CommGroupType::Consecutive, 0)); },
              {"replicatedallgather", "needs a positive replicaGroupSize"});
  expectError([&] { gc.replicatedallreduce({x, x}); }, {"replicatedallreduce"});
}

ir::Graph& graphWithX(ir::Graph& g, int64_t replicas, DataType type = DataType::FLOAT) {
  if (replicas > 0) g.setReplicationFactor(replicas);
  g.addTensor("x", TensorInfo(type, {3, 3}), ir::TensorKind::Variable,
              std::make_shared<HostTensor>(HostTensor(TensorInfo(type, {3, 3}))));
  return g;
}

TensorId add(ir::Graph& g, const std::string& type, Attributes a) {
  return addOp(g, type, {"x"}, std::move(a), 1, ir::kGraphcoreDomain)[0];
}

TEST(CollectiveOps, ShapesFollowTheGroupSize) {
  ir::Graph g;
  graphWithX(g, 8);
  EXPECT_EQ(g.tensor(add(g, "ReplicatedReduceScatter", {})).info.shape(), (Shape{2}));  // all 8
  EXPECT_EQ(g.tensor(add(g, "ReplicatedAllGather", {})).info.shape(), (Shape{72}));
  EXPECT_EQ(g.tensor(add(g, "ReplicatedReduceScatter",
                         attrs({{"commGroupType", int64_t{2}}, {"commGroupSize", int64_t{4}}})))
                .info.shape(),
            (Shape{3}));
  EXPECT_EQ(
      g.tensor(add(g, "ReplicatedAllGather", attrs({{"commGroupType", int64_t{3}}}))).info.shape(),
      (Shape{9}));
  EXPECT_EQ(g.tensor(add(g, "ReplicatedAllReduce", {})).info.shape(), (Shape{3, 3}));
}

TEST(CollectiveOps, UnknownReplicaCountForAllIsExplained) {
  ir::Graph g;
  graphWithX(g, 0);
  expectError([&] { add(g, "ReplicatedReduceScatter", {}); },
              {"ReplicatedReduceScatter", "depends on the number of replicas in its group",
               "replication factor"});
  expectError([&] { add(g, "ReplicatedAllGather", {}); },
              {"ReplicatedAllGather", "replication factor"});
  // Explicit groups and all-reduces need no replica count.
  EXPECT_EQ(g.tensor(add(g, "ReplicatedAllGather",
                         attrs({{"commGroupType", int64_t{1}}, {"commGroupSize", int64_t{2}}})))
                .info.shape(),
            (Shape{18}));
  EXPECT_EQ(g.tensor(add(g, "ReplicatedAllReduce", {})).info.shape(), (Shape{3, 3}));
}

TEST(CollectiveOps, BadAttributesAreRefused) {
  ir::Graph g;
  graphWithX(g, 4);
  expectError(
      [&] {
        add(g, "ReplicatedAllReduce", attrs({{"op", int64_t{8}}}));
      },
      {"ReplicatedAllReduce", "operator Local does not reduce"});
  expectError(
      [&] {
        add(g, "ReplicatedAllReduce", attrs({{"op", int64_t{11}}}));
      },
      {"op 11 is not a CollectiveOperator"});
  expectError(
      [&] {
        add(g, "ReplicatedAllGather", attrs({{"op", int64_t{0}}}));
      },
      {"ReplicatedAllGather", "takes no 'op' attribute"});
  expectError(
      [&] {
        add(g, "ReplicatedAllReduce",
            attrs({{"commGroupType", int64_t{1}}, {"replicaGroupingStride", int64_t{1}}}));
      },
      {"both as a CommGroup", "and as a ReplicaGrouping"});
  expectError(
      [&] {
        add(g, "ReplicatedAllReduce", attrs({{"commGroupType", int64_t{7}}}));
      },
      {"commGroupType 7 is not a CommGroupType"});
  // Groups that do not divide the 4 replicas.
  expectError(
      [&] {
        add(g, "ReplicatedReduceScatter",
            attrs({{"commGroupType", int64_t{1}}, {"commGroupSize", int64_t{3}}}));
      },
      {"ReplicatedReduceScatter", "must be positive and divide the number of replicas"});
  expectError(
      [&] {
        add(g, "ReplicatedAllGather",
            attrs({{"replicaGroupingStride", int64_t{3}}, {"replicaGroupingSize", int64_t{2}}}));
      },
      {"ReplicatedAllGather", "divisible by the product of the stride and the group size"});
  ir::Graph ints;
  graphWithX(ints, 4, DataType::INT32);
  expectError([&] { add(ints, "ReplicatedAllReduce", {}); }, {"must be FLOAT or FLOAT16"});
}

// Gradients: all-reduce -> all-reduce, reduce-scatter -> all-gather (+ cut + reshape),
// all-gather -> reduce-scatter (+ reshape), all over the forward op's group.
TEST(CollectiveOps, GradientGraphs) {
  auto typesOf = [](const ir::Graph& g) {
    std::vector<std::string> types;
    for (const auto& [id, op] : g.ops()) {
      if (op->phase == ir::Phase::Backward) types.push_back(op->type);
    }
    return types;
  };
  auto differentiate = [&](const std::string& type, Attributes a) {
    auto g = std::make_unique<ir::Graph>();
    graphWithX(*g, 4);
    const TensorId y = add(*g, type, std::move(a));
    Attributes sum;
    sum.set("shape", std::vector<int64_t>{});
    const TensorId loss = addOp(*g, "ReduceSumToShape", {y}, sum, 1, ir::kXtrainDomain)[0];
    ir::autodiff(*g, loss, {"x"});
    return g;
  };
  const Attributes orthogonal =
      attrs({{"commGroupType", int64_t{2}}, {"commGroupSize", int64_t{2}}});
  auto g = differentiate("ReplicatedAllReduce", orthogonal);
  auto types = typesOf(*g);
  ASSERT_NE(std::find(types.begin(), types.end(), "ReplicatedAllReduce"), types.end());
  for (const auto& [id, op] : g->ops()) {
    if (op->phase == ir::Phase::Backward && op->type == "ReplicatedAllReduce") {
      EXPECT_EQ(op->attrs.getInt("commGroupType"), 2);
      EXPECT_EQ(op->attrs.getInt("commGroupSize"), 2);
    }
  }
  types = typesOf(*differentiate("ReplicatedReduceScatter", orthogonal));  // 9 -> 5, gathered 10
  EXPECT_NE(std::find(types.begin(), types.end(), "ReplicatedAllGather"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "Slice"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "Reshape"), types.end());
  types = typesOf(*differentiate("ReplicatedAllGather", orthogonal));
  EXPECT_NE(std::find(types.begin(), types.end(), "ReplicatedReduceScatter"), types.end());
  expectError(
      [&] {
        differentiate("ReplicatedAllReduce", attrs({{"op", int64_t{3}}}));
      },
      {"ReplicatedAllReduce", "operator Min has no gradient"});
  expectError(
      [&] {
        differentiate("ReplicatedReduceScatter", attrs({{"op", int64_t{7}}}));
      },
      {"ReplicatedReduceScatter", "operator SquareAdd has no gradient"});
}

}  // namespace
}  // namespace xtrain::testing
