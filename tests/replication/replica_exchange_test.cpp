// ReplicaExchange driven directly: jobs of I instances (threads over inproc communicators) x L
// local replicas with fake buffers, every result against a naive reference over the G = I x L
// replicas. Values are small integers, so sums and means are exact and compared bit for bit.
#include "replication/replica_exchange.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "comm/communicator.hpp"
#include "replication_testing.hpp"

namespace xtrain::replication {
namespace {

using testing::Job;
using testing::replicaValues;
using testing::runJob;
using Tensors = std::map<TensorId, HostTensor>;

std::vector<float> valuesOf(const HostTensor& t) {
  const auto s = t.span<float>();
  return {s.begin(), s.end()};
}

// The reference: element i of the sum over `replicas` of replicaValues(r, n), divided by their
// number when `mean`.
std::vector<float> reduced(const std::vector<int64_t>& replicas, int64_t n, bool mean) {
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  for (int64_t r : replicas) {
    const HostTensor v = replicaValues(r, n);
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] += v.data<float>()[i];
  }
  if (mean) {
    for (float& x : out) x /= static_cast<float>(replicas.size());
  }
  return out;
}

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < n; ++i) r.push_back(i);
  return r;
}

// (instances, local replicas, threaded forEach, mean)
class PlainGradients : public ::testing::TestWithParam<std::tuple<int, int64_t, bool, bool>> {};

TEST_P(PlainGradients, EveryReplicaHoldsTheReductionOverAllReplicas) {
  const auto [instances, local, threaded, mean] = GetParam();
  // Bucket of 64 bytes: "small" and "tiny" share a bucket, "large" (more than a fused block of
  // 2048) is reduced alone and in place, "empty" has nothing to reduce.
  const Job job{instances, local, threaded, 64};
  const std::map<TensorId, int64_t> sizes{{"small", 5}, {"tiny", 3}, {"large", 3000}, {"empty", 0}};
  GradientPlan plan;
  plan.mean = mean;
  for (const auto& [id, n] : sizes) plan.plain.push_back(id);
  const auto out = runJob(
      job,
      [&](int64_t g, Tensors& t) {
        for (const auto& [id, n] : sizes) t[id] = replicaValues(g, n);
      },
      plan, [](ReplicaExchange& e) { e.reduceGradients(); });
  const int64_t G = instances * local;
  for (int64_t g = 0; g < G; ++g) {
    for (const auto& [id, n] : sizes) {
      EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at(id)), reduced(range(G), n, mean))
          << "replica " << g << ", " << id;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PlainGradients,
                         ::testing::Combine(::testing::Values(1, 2, 4), ::testing::Values(1, 2),
                                            ::testing::Bool(), ::testing::Bool()));

// Over shm, replica 0's plain gradients move (with their values) into the memory the instances
// share, where the reducer all-reduces them in place; the results are those of inproc.
TEST(ReplicaExchange, GradientsOverShmLiveInSharedMemoryAndReduceTheSame) {
  const std::map<TensorId, int64_t> sizes{{"a", 16}, {"b", 3}, {"large", 5000}, {"c", 7}};
  GradientPlan plan;
  plan.mean = true;
  for (const auto& [id, n] : sizes) plan.plain.push_back(id);
  const auto fill = [&](int64_t g, Tensors& t) {
    for (const auto& [id, n] : sizes) t[id] = replicaValues(g, n);
  };
  for (int64_t local : {1, 2}) {
    SCOPED_TRACE("local replicas " + std::to_string(local));
    std::vector<int> moved(2, 0);
    const auto shm = runJob(Job{2, local, false, 128, "shm"}, fill, plan, [&](ReplicaExchange& e) {
      for (const auto& [id, n] : sizes) {
        const float* home = e.reducer()->sharedBuffer(id);
        if (home == nullptr) continue;
        ++moved[static_cast<size_t>(e.instances()->rank())];
        // Instance i's replica 0 is global replica i * local: its values came along.
        const int64_t g = e.instances()->rank() * e.layout().local;
        EXPECT_EQ(std::vector<float>(home, home + n), valuesOf(replicaValues(g, n))) << id;
      }
      e.reduceGradients();
      e.reduceGradients();
    });
    // In backward order, buckets of 128 bytes: [large], [c, b, a]; b and a are not 64-byte
    // aligned there, so they stay where they are and are copied in and out.
    EXPECT_EQ(moved, (std::vector<int>{2, 2}));
    const auto inproc = runJob(Job{2, local, false, 128}, fill, plan, [](ReplicaExchange& e) {
      e.reduceGradients();
      e.reduceGradients();
    });
    for (size_t g = 0; g < shm.size(); ++g) {
      for (const auto& [id, n] : sizes) {
        EXPECT_EQ(valuesOf(shm[g].at(id)), valuesOf(inproc[g].at(id))) << "replica " << g << id;
      }
    }
  }
}

TEST(ReplicaExchange, GradientsReadyEarlyReduceLikeTheOthers) {
  GradientPlan plan;
  plan.mean = true;
  plan.plain = {"a", "b", "c"};
  const auto out = runJob(
      Job{4, 1, false, 16},
      [](int64_t g, Tensors& t) {
        t["a"] = replicaValues(g, 3);
        t["b"] = replicaValues(g, 7);
        t["c"] = replicaValues(g, 2);
      },
      plan,
      [](ReplicaExchange& e) {
        // The backward pass produces the last weights' gradients first; "a" never says it is ready.
        e.gradientReady("c");
        e.gradientReady("b");
        e.reduceGradients();
        // A second step: the buckets start afresh.
        e.gradientReady("c");
        e.reduceGradients();
      });
  for (int64_t g = 0; g < 4; ++g) {
    // The second step reduces the (already equal) means again: still the mean.
    EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("a")), reduced(range(4), 3, true));
    EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("b")), reduced(range(4), 7, true));
    EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("c")), reduced(range(4), 2, true));
  }
}

// (instances, local replicas, grouping stride): 4 replicas in groups of 2, Consecutive (stride 1:
// {0,1} {2,3}) or Orthogonal (stride 2: {0,2} {1,3}, spanning instances when L = 2).
class GroupedGradients : public ::testing::TestWithParam<std::tuple<int, int64_t, int64_t>> {};

TEST_P(GroupedGradients, EveryReplicaHoldsItsGroupsMean) {
  const auto [instances, local, stride] = GetParam();
  const VariableSettings settings(
      CommGroup(stride == 1 ? CommGroupType::Consecutive : CommGroupType::Orthogonal, 2));
  const GroupedVariable v(settings, 4, local, {6});
  GradientPlan plan;
  plan.mean = true;
  plan.grouped = {{"w", "w/grad", v}};
  const auto out = runJob(
      Job{instances, local, false, 1024},
      [](int64_t g, Tensors& t) { t["w/grad"] = replicaValues(g, 6); }, plan,
      [](ReplicaExchange& e) { e.reduceGradients(); });
  for (int64_t g = 0; g < 4; ++g) {
    const auto members = v.grouping.getReplicasAt(v.grouping.getGroupAt(g));
    EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("w/grad")), reduced(members, 6, true))
        << "replica " << g;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, GroupedGradients,
                         ::testing::Values(std::tuple{1, int64_t{4}, int64_t{1}},
                                           std::tuple{1, int64_t{4}, int64_t{2}},
                                           std::tuple{2, int64_t{2}, int64_t{1}},
                                           std::tuple{2, int64_t{2}, int64_t{2}},
                                           std::tuple{4, int64_t{1}, int64_t{1}},
                                           std::tuple{4, int64_t{1}, int64_t{2}}));

// A sharded weight of 10 elements over 4 replicas, domain All (4 shards of 3, by a reduce-scatter)
// or Consecutive(2) (2 shards of 5, by an all-reduce): ((instances, local replicas), domain group
// size).
class ShardedGradients
    : public ::testing::TestWithParam<std::tuple<std::pair<int, int64_t>, int64_t>> {};

TEST_P(ShardedGradients, EachReplicaHoldsItsShardOfTheMeanAndOfTheWeight) {
  const auto [layout, groupSize] = GetParam();
  const auto [instances, local] = layout;
  constexpr int64_t n = 10;
  const ReplicaGrouping domain(4, 1, groupSize);
  const int64_t s = (n + groupSize - 1) / groupSize;
  const ShardPlan p{domain, n, s, false};
  GradientPlan plan;
  plan.mean = true;
  plan.sharded = {{"w", "w/grad", "w/gradShard", "w/shard", "w/acc", p}};
  const HostTensor weight = replicaValues(7, n);
  const auto out = runJob(
      Job{instances, local, false, 1024},
      [&](int64_t g, Tensors& t) {
        t["w"] = weight;
        t["w/grad"] = replicaValues(g, n);
        t["w/gradShard"] = HostTensor(TensorInfo(DataType::FLOAT, {s}));
        t["w/shard"] = HostTensor(TensorInfo(DataType::FLOAT, {s}));
        t["w/acc"] = replicaValues(g, n);
      },
      plan, [](ReplicaExchange& e) { e.reduceGradients(); });
  const std::vector<float> mean = reduced(range(4), n, true);
  for (int64_t g = 0; g < 4; ++g) {
    const Tensors& t = out[static_cast<size_t>(g)];
    const int64_t shard = domain.getIndexInGroupAt(g);
    std::vector<float> gradShard(static_cast<size_t>(s), 0.0f), weightShard(gradShard);
    for (int64_t i = 0; i < s && shard * s + i < n; ++i) {
      gradShard[static_cast<size_t>(i)] = mean[static_cast<size_t>(shard * s + i)];
      weightShard[static_cast<size_t>(i)] = weight.data<float>()[shard * s + i];
    }
    EXPECT_EQ(valuesOf(t.at("w/gradShard")), gradShard) << "replica " << g;
    EXPECT_EQ(valuesOf(t.at("w/shard")), weightShard) << "replica " << g;
    EXPECT_EQ(valuesOf(t.at("w/acc")), std::vector<float>(n, 0.0f)) << "replica " << g;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, ShardedGradients,
                         ::testing::Combine(::testing::Values(std::pair{1, int64_t{4}},
                                                              std::pair{2, int64_t{2}},
                                                              std::pair{4, int64_t{1}}),
                                            ::testing::Values(2, 4)));

// After the update: replica r's weight shard holds shard indexInGroup(r) of a new whole weight;
// gatherShardedWeights gives every replica that whole weight, and gatherShards gives it to the
// host.
TEST(ReplicaExchange, ShardsAreGatheredIntoTheWholeWeightOnEveryReplica) {
  for (const auto& [instances, local, groupSize] :
       std::vector<std::tuple<int, int64_t, int64_t>>{{2, 2, 4}, {2, 2, 2}, {4, 1, 2}}) {
    constexpr int64_t n = 9;
    const ReplicaGrouping domain(4, 1, groupSize);
    const int64_t s = (n + groupSize - 1) / groupSize;
    const ShardPlan p{domain, n, s, false};
    GradientPlan plan;
    plan.sharded = {{"w", "w/grad", "w/gradShard", "w/shard", "", p}};
    const HostTensor updated = replicaValues(3, n);
    std::vector<std::vector<float>> host(static_cast<size_t>(instances));
    const auto out = runJob(
        Job{instances, local, false, 1024},
        [&](int64_t g, Tensors& t) {
          t["w"] = HostTensor(TensorInfo(DataType::FLOAT, {n}));
          t["w/shard"] = HostTensor(TensorInfo(DataType::FLOAT, {s}));
          copyShardOut(updated.raw(), n, s, domain.getIndexInGroupAt(g), t["w/shard"].raw());
        },
        plan,
        [&](ReplicaExchange& e) {
          e.gatherShardedWeights();
          std::vector<float> whole(n);
          e.gatherShards(p, "w/shard", whole.data());
          host[static_cast<size_t>(e.layout().instance())] = whole;
        });
    for (int64_t g = 0; g < 4; ++g) {
      EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("w")), valuesOf(updated))
          << instances << "x" << local << " replica " << g;
    }
    for (const auto& h : host) EXPECT_EQ(h, valuesOf(updated));
  }
}

TEST(ReplicaExchange, BroadcastGivesEveryReplicaTheRootInstancesValue) {
  constexpr int64_t n = 4;
  // Sharded state over Consecutive(2): shards of 2, group {0, 1} on instance 0, {2, 3} on
  // instance 1. The whole value is the first group's, so after a broadcast every group holds its
  // shards.
  const ReplicaGrouping domain(4, 1, 2);
  const ShardPlan p{domain, n, 2, false};
  const auto out = runJob(
      Job{2, 2, false, 1024},
      [&](int64_t g, Tensors& t) {
        t["plain"] = replicaValues(g, n);
        const HostTensor whole = replicaValues(100 + g / 2, n);  // differs between the groups
        t["state"] = HostTensor(TensorInfo(DataType::FLOAT, {2}));
        copyShardOut(whole.raw(), n, 2, g % 2, t["state"].raw());
      },
      GradientPlan{},
      [&](ReplicaExchange& e) {
        e.broadcastPlain("plain", 1);
        e.broadcastSharded("state", p, 1);
      });
  for (int64_t g = 0; g < 4; ++g) {
    // Instance 1's replica 0 is global replica 2.
    EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("plain")), valuesOf(replicaValues(2, n)));
    const float first = 100000.0f + 2.0f * static_cast<float>(g % 2);
    EXPECT_EQ(valuesOf(out[static_cast<size_t>(g)].at("state")),
              (std::vector<float>{first, first + 1}))
        << "replica " << g;
  }
}

TEST(ReplicaExchange, GroupedBroadcastChangesOnlyTheGroupsTheRootHolds) {
  // Consecutive(2) over 2 instances of 2: group 0 = {0, 1} on instance 0, group 1 = {2, 3} on
  // instance 1; from root 1 only group 1 changes (it keeps the value of its lowest replica, 2).
  const GroupedVariable v(VariableSettings(CommGroup(CommGroupType::Consecutive, 2)), 4, 2, {3});
  const auto out = runJob(
      Job{2, 2, false, 1024}, [](int64_t g, Tensors& t) { t["w"] = replicaValues(g, 3); },
      GradientPlan{}, [&](ReplicaExchange& e) { e.broadcastGrouped("w", v, 1); });
  EXPECT_EQ(valuesOf(out[0].at("w")), valuesOf(replicaValues(0, 3)));
  EXPECT_EQ(valuesOf(out[1].at("w")), valuesOf(replicaValues(1, 3)));
  EXPECT_EQ(valuesOf(out[2].at("w")), valuesOf(replicaValues(2, 3)));
  EXPECT_EQ(valuesOf(out[3].at("w")), valuesOf(replicaValues(2, 3)));
}

TEST(ReplicaExchange, GroupedHostViewTakesEachGroupFromItsLowestReplica) {
  // Orthogonal(2): groups {0, 2} and {1, 3}: the view is [replica 0's value, replica 1's value],
  // on every instance.
  const GroupedVariable v(VariableSettings(CommGroup(CommGroupType::Orthogonal, 2)), 4, 1, {2});
  std::vector<std::vector<float>> views(4);
  runJob(
      Job{4, 1, false, 1024}, [](int64_t g, Tensors& t) { t["w"] = replicaValues(g, 2); },
      GradientPlan{},
      [&](ReplicaExchange& e) {
        HostTensor view(TensorInfo(DataType::FLOAT, v.hostShape()));
        e.groupedToHost("w", v, view);
        views[static_cast<size_t>(e.layout().instance())] = valuesOf(view);
      });
  for (const auto& view : views) EXPECT_EQ(view, (std::vector<float>{0, 1, 1000, 1001}));
}

TEST(ReplicaExchange, SumOverShardsCountsEveryShardOnce) {
  // Two plans: domain All (4 shards) and Consecutive(2) (2 shards, held twice: counted once).
  const ShardPlan all{ReplicaGrouping(4), 8, 2, false};
  const ShardPlan pairs{ReplicaGrouping(4, 1, 2), 8, 4, false};
  std::vector<std::vector<double>> sums(2);
  runJob(
      Job{2, 2, false, 1024}, [](int64_t, Tensors&) {}, GradientPlan{},
      [&](ReplicaExchange& e) {
        sums[static_cast<size_t>(e.layout().instance())] =
            e.sumOverShards({&all, &pairs}, 2, [&](size_t item, int64_t local, double* out) {
              out[0] = static_cast<double>(e.layout().globalIndex(local)) + 10.0 * item;
              out[1] = 1.0;
            });
      });
  // all: 0+1+2+3 and 4 shards; pairs: the first group's members 0 and 1: 10+11 and 2.
  for (const auto& s : sums) EXPECT_EQ(s, (std::vector<double>{6, 4, 21, 2}));
}

TEST(ReplicaExchange, EveryInstanceTakesTheSameDecision) {
  std::vector<int> decisions(3, -1);
  runJob(
      Job{3, 1, false, 1024}, [](int64_t, Tensors&) {}, GradientPlan{},
      [&](ReplicaExchange& e) {
        const int i = e.layout().instance();
        decisions[static_cast<size_t>(i)] = e.trueOnAllInstances(i != 1, "test") ? 1 : 0;
      });
  EXPECT_EQ(decisions, (std::vector<int>{0, 0, 0}));
  runJob(
      Job{3, 1, false, 1024}, [](int64_t, Tensors&) {}, GradientPlan{},
      [&](ReplicaExchange& e) {
        decisions[static_cast<size_t>(e.layout().instance())] =
            e.trueOnAllInstances(true, "test") ? 1 : 0;
      });
  EXPECT_EQ(decisions, (std::vector<int>{1, 1, 1}));
}

TEST(ReplicaLayout, MapsLocalAndGlobalReplicas) {
  const ReplicaLayout layout{2, 8, 4};
  EXPECT_EQ(layout.instances(), 4);
  EXPECT_EQ(layout.instance(), 2);
  EXPECT_EQ(layout.globalIndex(1), 5);
  EXPECT_EQ(layout.localIndex(5), 1);
  EXPECT_EQ(layout.localIndex(3), -1);
  EXPECT_EQ(layout.localIndex(6), -1);
  EXPECT_EQ(layout.instanceOf(7), 3);
}

}  // namespace
}  // namespace xtrain::replication
