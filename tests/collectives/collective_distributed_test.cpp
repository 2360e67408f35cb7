// Replicated collectives across instances, with real processes: this binary starts itself under
// `xrun` (CollectivesAcrossInstances.*); the instances run the CollectiveWorker.* cases, which skip
// unless xrun started them (ctest leaves them out: private_deps.cmake). Section 9 case 1 with
// 2 instances x 1 replica; case 2, groups that span instances (Orthogonal) or not (Consecutive),
// and gradients with 2 instances x 2 replicas.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "collective_models.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/dist.hpp"

namespace xtrain::testing {
namespace {

using Op = CollectiveOperator;

bool startedByXrun() {
  return std::getenv("XTRAIN_NUM_INSTANCES") != nullptr;
}

SessionOptions instanceOptions() {
  SessionOptions o;
  dist::configureSessionOptions(o);
  return o;
}

// Every replica of the job feeds [0..9]; all-reduce Sum gives N * [0..9] on every replica.
TEST(CollectiveWorker, Case1AllReduceSum) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of CollectivesAcrossInstances.*";
  const SessionOptions o = instanceOptions();
  const int64_t N = o.getGlobalReplicationFactor();
  const int64_t L = o.getLocalReplicationFactor();
  const auto y = runInference(buildInferenceModel(10, {CollectiveKind::AllReduce, Op::Add, {}}), o,
                              std::vector<std::vector<float>>(static_cast<size_t>(L), arange(10)));
  for (const auto& row : y) {
    for (size_t i = 0; i < row.size(); ++i)
      EXPECT_EQ(row[i], static_cast<float>(N * static_cast<int64_t>(i)));
  }
}

TEST(CollectiveWorker, Case2AndGroupsAcrossInstances) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of CollectivesAcrossInstances.*";
  const SessionOptions o = instanceOptions();
  const int64_t N = o.getGlobalReplicationFactor();
  if (N % 2 != 0) GTEST_SKIP() << "needs an even number of replicas";
  const CommGroup consecutive(CommGroupType::Consecutive, 2);
  const CommGroup orthogonal(CommGroupType::Orthogonal, 2);
  // Case 2: arange(12) on every replica, reduce-scatter over Consecutive(2).
  expectCollectiveMatchesHost({CollectiveKind::ReduceScatter, Op::Add, consecutive}, o,
                              std::vector<std::vector<float>>(static_cast<size_t>(N), arange(12)));
  const auto in = distinctInputs(N, 7);
  for (const CommGroup& g : {consecutive, orthogonal}) {
    expectCollectiveMatchesHost({CollectiveKind::AllReduce, Op::Mean, g}, o, in);
    expectCollectiveMatchesHost({CollectiveKind::AllReduce, Op::Max, g}, o, in);
    expectCollectiveMatchesHost({CollectiveKind::ReduceScatter, Op::Add, g}, o, in);
    expectCollectiveMatchesHost({CollectiveKind::AllGather, Op::Add, g}, o, in);
  }
}

TEST(CollectiveWorker, GradientsAcrossInstances) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of CollectivesAcrossInstances.*";
  const SessionOptions o = instanceOptions();
  if (o.getGlobalReplicationFactor() % 2 != 0) GTEST_SKIP() << "needs an even number of replicas";
  const CommGroup orthogonal(CommGroupType::Orthogonal, 2);
  expectGradientMatchesHost({CollectiveKind::AllReduce, Op::Add, {}}, o, 3);
  expectGradientMatchesHost({CollectiveKind::ReduceScatter, Op::Add, orthogonal}, o, 5);
  expectGradientMatchesHost({CollectiveKind::AllGather, Op::Add, orthogonal}, o, 2);
}

// Every wait is bounded: the comm timeout inside, runCommand's `timeout` around the whole job.
CommandResult runUnderXrun(const std::string& layout) {
  return runTestsUnderXrun(layout, "test_collectives", "CollectiveWorker.*",
                           "XTRAIN_COMM_TIMEOUT=30s");
}

void expectWorkersPass(const std::string& layout, int passedPerInstance) {
  const CommandResult r = runUnderXrun(layout);
  ASSERT_EQ(r.exitCode, 0) << "xrun " << layout << ":\n" << r.output;
  // Each instance's gtest summary; none of the cases may have skipped (xrun started them).
  size_t passed = 0;
  for (size_t at = r.output.find("[  PASSED  ] "); at != std::string::npos;
       at = r.output.find("[  PASSED  ] ", at + 1)) {
    EXPECT_EQ(std::stoi(r.output.substr(at + 13)), passedPerInstance) << r.output;
    ++passed;
  }
  EXPECT_EQ(passed, 2u) << "expected two instances' summaries:\n" << r.output;
  EXPECT_EQ(r.output.find("[  SKIPPED ]"), std::string::npos) << r.output;
}

TEST(CollectivesAcrossInstances, TwoInstancesOfOneReplica) {
  expectWorkersPass("-n 2", 3);
}

TEST(CollectivesAcrossInstances, TwoInstancesOfTwoReplicas) {
  expectWorkersPass("-n 2 --num-replicas 4", 3);
}

}  // namespace
}  // namespace xtrain::testing
