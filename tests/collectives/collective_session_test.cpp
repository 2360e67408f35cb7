// Replicated collectives inside models, run by sessions with local replicas (threads): section 9
// cases 1 and 2 of docs/replication-semantics.md, other groups and operators against a host
// reference, gradients against finite differences of the job's total loss, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "collective_models.hpp"
#include "testing/error_testing.hpp"

namespace xtrain::testing {
namespace {

using Op = CollectiveOperator;
constexpr CollectiveKind kAllReduce = CollectiveKind::AllReduce;
constexpr CollectiveKind kReduceScatter = CollectiveKind::ReduceScatter;
constexpr CollectiveKind kAllGather = CollectiveKind::AllGather;

const CommGroup kAll;
const CommGroup kConsecutive2(CommGroupType::Consecutive, 2);
const CommGroup kOrthogonal2(CommGroupType::Orthogonal, 2);
const CommGroup kUngrouped(CommGroupType::Ungrouped, 0);

void expectMatchesHost(const CollectiveCase& c, int64_t replicas,
                       const std::vector<std::vector<float>>& inputs) {
  expectCollectiveMatchesHost(c, localReplicas(replicas), inputs);
}

// Section 9 case 1: 2 replicas, [0..9] each, all-reduce Sum: every replica holds 2 * [0..9].
TEST(ReplicatedCollectives, Case1AllReduceSumOverTwoLocalReplicas) {
  const auto m = buildInferenceModel(10, {kAllReduce, Op::Add, kAll});
  const auto y = runInference(m, localReplicas(2), {arange(10), arange(10)});
  std::vector<float> twice;
  for (float v : arange(10)) twice.push_back(2 * v);
  EXPECT_EQ(y, (std::vector<std::vector<float>>{twice, twice}));
}

// Section 9 case 2: N = 4, Consecutive(2) reduce-scatter of arange(12) on every replica: replica r
// holds 2 * x[(r%2)*6 : (r%2+1)*6].
TEST(ReplicatedCollectives, Case2ReduceScatterConsecutiveGroupsOfTwo) {
  const auto m = buildInferenceModel(12, {kReduceScatter, Op::Add, kConsecutive2});
  const auto x = arange(12);
  const auto y = runInference(m, localReplicas(4), {x, x, x, x});
  for (size_t r = 0; r < 4; ++r) {
    std::vector<float> want;
    for (size_t i = (r % 2) * 6; i < (r % 2 + 1) * 6; ++i) want.push_back(2 * x[i]);
    EXPECT_EQ(y[r], want) << "replica " << r;
  }
}

TEST(ReplicatedCollectives, OrthogonalGroupsPairReplicasHalfTheJobApart) {
  // Groups {0,2} {1,3}: replica 0 gets x0 + x2, replica 1 gets x1 + x3.
  const auto in = distinctInputs(4, 6);
  const auto y = runInference(buildInferenceModel(6, {kAllReduce, Op::Add, kOrthogonal2}),
                              localReplicas(4), in);
  EXPECT_EQ(y[0][1], in[0][1] + in[2][1]);
  EXPECT_EQ(y[1][1], in[1][1] + in[3][1]);
  expectMatchesHost({kAllReduce, Op::Add, kOrthogonal2}, 4, in);
  // 7 elements over groups of 2: parts of 4, the last one padded with a zero.
  expectMatchesHost({kReduceScatter, Op::Add, kOrthogonal2}, 4, distinctInputs(4, 7));
}

TEST(ReplicatedCollectives, AllGatherConcatenatesTheGroupInGroupOrder) {
  const auto in = distinctInputs(4, 3);
  const auto y = runInference(buildInferenceModel(3, {kAllGather, Op::Add, kOrthogonal2}),
                              localReplicas(4), in);
  // Replica 3's group is {1, 3}: x1 then x3.
  EXPECT_EQ(y[3], (std::vector<float>{100, 101, 102, 300, 301, 302}));
  expectMatchesHost({kAllGather, Op::Add, kConsecutive2}, 4, in);
  expectMatchesHost({kAllGather, Op::Add, kConsecutive2}, 2, distinctInputs(2, 3));
}

TEST(ReplicatedCollectives, EveryOperatorMatchesTheHostReference) {
  std::vector<std::vector<float>> in = {
      {1, -2, 0, 4.5f}, {3, 0.5f, 0, -1}, {-1, 2, 1, 2}, {2, 2, 0, 0.25f}};
  for (Op op : {Op::Add, Op::Mean, Op::Mul, Op::Min, Op::Max, Op::LogicalAnd, Op::LogicalOr,
                Op::SquareAdd}) {
    expectMatchesHost({kAllReduce, op, kAll}, 4, in);
    expectMatchesHost({kReduceScatter, op, kConsecutive2}, 4, in);
  }
}

TEST(ReplicatedCollectives, ReplicaGroupingOverloadsUseStrideAndGroupSize) {
  // ReplicaGrouping(4, stride 2, size 2) has Orthogonal(2)'s groups {0,2} {1,3}.
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  auto gc = b->aiGraphcoreOpset1();
  const ReplicaGrouping grouping(4, 2, 2);
  InferenceModel m;
  m.x = x;
  m.y = gc.replicatedallgather(
      {gc.replicatedreducescatter({gc.replicatedallreduce({x}, Op::Max, grouping)}, Op::Add,
                                  grouping)},
      grouping);
  b->addOutputTensor(m.y);
  m.proto = b->getModelProto();
  const auto in = distinctInputs(4, 2);
  const auto y = runInference(m, localReplicas(4), in);
  // max over {0,2} is x2; reduce-scatter of [x2, x2] gives 2*x2 split in halves; gathered: 2*x2.
  EXPECT_EQ(y[0], (std::vector<float>{400, 402}));
  EXPECT_EQ(y[3], (std::vector<float>{600, 602}));
}

TEST(ReplicatedCollectives, ResultsAreBitwiseIdenticalOnEveryMember) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1e3f, 1e3f);
  std::vector<std::vector<float>> in(4, std::vector<float>(257));
  for (auto& row : in) {
    for (auto& v : row) v = u(rng) * std::pow(10.0f, static_cast<float>(rng() % 7) - 3.0f);
  }
  for (Op op : {Op::Add, Op::Mean, Op::SquareAdd}) {
    const auto y =
        runInference(buildInferenceModel(257, {kAllReduce, op, kAll}), localReplicas(4), in);
    for (size_t r = 1; r < 4; ++r) {
      EXPECT_EQ(std::memcmp(y[r].data(), y[0].data(), y[0].size() * sizeof(float)), 0)
          << "replica " << r << " differs from replica 0 (operator " << op << ")";
    }
  }
}

// Without replication every group is the one replica: the collectives copy (Add).
TEST(ReplicatedCollectives, OneReplicaMakesThemIdentities) {
  const auto x = arange(5, 1.0f);
  EXPECT_EQ(
      runInference(buildInferenceModel(5, {kAllReduce, Op::Add, kAll}), localReplicas(1), {x})[0],
      x);
  EXPECT_EQ(runInference(buildInferenceModel(5, {kReduceScatter, Op::Add, kUngrouped}),
                         localReplicas(1), {x})[0],
            x);
  EXPECT_EQ(runInference(buildInferenceModel(5, {kAllGather, Op::Add, kUngrouped}),
                         localReplicas(1), {x})[0],
            x);
}

// CommGroup All's group size is the replica count, which shapes a reduce-scatter's output: the
// session's import tells the graph its replication factor (Graph::setReplicationFactor, see
// docs/replicated-ops.md).
TEST(ReplicatedCollectives, ReduceScatterAndAllGatherOverAllReplicas) {
  expectMatchesHost({kReduceScatter, Op::Add, kAll}, 4, distinctInputs(4, 10));
  expectMatchesHost({kAllGather, Op::Add, kAll}, 4, distinctInputs(4, 3));
}

// The gradient flows through the collective's gradient (a collective in the Backward phase).
void expectGradientMatches(const CollectiveCase& c, int64_t replicas, int64_t n) {
  expectGradientMatchesHost(c, localReplicas(replicas), n);
}

TEST(ReplicatedCollectives, AllReduceGradientsMatchFiniteDifferences) {
  expectGradientMatches({kAllReduce, Op::Add, kAll}, 2, 4);
  expectGradientMatches({kAllReduce, Op::Mean, kAll}, 4, 3);
  expectGradientMatches({kAllReduce, Op::Add, kOrthogonal2}, 4, 3);
}

TEST(ReplicatedCollectives, ReduceScatterGradientsMatchFiniteDifferences) {
  // 5 elements over groups of 2: the gradient is gathered, then cut back to 5.
  expectGradientMatches({kReduceScatter, Op::Add, kConsecutive2}, 2, 5);
  expectGradientMatches({kReduceScatter, Op::Mean, kOrthogonal2}, 4, 5);
}

TEST(ReplicatedCollectives, AllGatherGradientsMatchFiniteDifferences) {
  expectGradientMatches({kAllGather, Op::Add, kConsecutive2}, 2, 3);
  expectGradientMatches({kAllGather, Op::Add, kOrthogonal2}, 4, 2);
}

TEST(ReplicatedCollectives, AGroupThatDoesNotDivideTheReplicasIsRefused) {
  const CollectiveCase c{kAllReduce, Op::Add, CommGroup(CommGroupType::Consecutive, 3)};
  const std::string e = errorOf(
      [&] { runInference(buildInferenceModel(4, c), localReplicas(4), distinctInputs(4, 4)); });
  EXPECT_NE(e.find("ReplicatedAllReduce"), std::string::npos) << e;
  EXPECT_NE(e.find("must be positive and divide the number of replicas"), std::string::npos) << e;
}

TEST(ReplicatedCollectives, OperatorsWithoutGradientAreRefusedWhenDifferentiated) {
  const CollectiveCase c{kAllReduce, Op::Max, kAll};
  const std::string e = errorOf([&] {
    trainOneStep(buildTrainingModel(2, {1, 1}, c, 2), localReplicas(2), 0.1f, {{1, 2}, {3, 4}});
  });
  EXPECT_NE(e.find("ReplicatedAllReduce"), std::string::npos) << e;
  EXPECT_NE(e.find("operator Max has no gradient"), std::string::npos) << e;
}

// Per-op timing (always on: the session's profile) keeps the local replicas on their threads, so
// collectives meet; the report counts replica 0's collective ops by grouping (docs/reports.md).
TEST(ReplicatedCollectives, ReportCountsTheModelsCollectiveOps) {
  const InferenceModel m = buildInferenceModel(3, {kAllReduce, Op::Add, kAll});
  const SessionOptions o = localReplicas(2);
  auto s = InferenceSession::createFromOnnxModel(
      m.proto, DataFlow(1, std::vector<TensorId>{m.y}),
      DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "2"}}), {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  const auto in = distinctInputs(2, 3);
  std::vector<float> x;
  for (const auto& row : in) x.insert(x.end(), row.begin(), row.end());
  NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
  auto anchors = s->initAnchorArrays();
  StepIO io({{m.x, xa}}, {{m.y, *anchors.at(m.y)}});
  for (int run = 0; run < 2; ++run) s->run(io);
  const float* y = anchors.at(m.y)->dataAs<float>();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(y[i], in[0][i] + in[1][i]);
  const std::string report = s->getSummaryReport();
  EXPECT_CONTAINS(report, "all-reduce of ReplicatedAllReduce over " + ReplicaGrouping(2).str() +
                              " (2 replicas): 2 call(s), 24 B");
}

}  // namespace
}  // namespace xtrain::testing
