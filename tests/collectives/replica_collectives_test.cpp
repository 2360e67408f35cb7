// The rendezvous of local replicas (replication/replica_collectives.hpp) on its own: bounded
// waits, failures, mismatches and recovery; and lowered graphs run by hand on replica threads, for
// the groups whose size comes from the graph's replication factor (CommGroup All).
#include "replication/replica_collectives.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "ir/graph.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

using namespace std::chrono_literals;
using replication::ReplicaCollectives;

HostTensor vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return HostTensor::fromVector<float>({n}, v);
}

// allReduce(Add) over all `c`'s replicas from replica r, under a ReplicaScope as the session does.
std::vector<float> allReduceFrom(ReplicaCollectives& c, int64_t r, std::vector<float> v) {
  const device::ReplicaScope scope(c, r, true);
  const HostTensor in = vec(std::move(v));
  HostTensor out(in.info());
  c.allReduce(r, in, out, ReplicaGrouping(c.numReplicas()), CollectiveOperator::Add, "test op");
  return out.toVector<float>();
}

TEST(ReplicaRendezvous, APeerThatNeverArrivesIsNamedAfterTheTimeout) {
  ReplicaCollectives c(nullptr, 2, 0, 2, 200ms);
  const auto start = std::chrono::steady_clock::now();
  expectError(
      [&] {
        allReduceFrom(c, 0, {1, 2});
      },
      {"test op", "local replica 1 (global 1) did not reach this collective within 200 ms"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ReplicaRendezvous, AFailedPeerReleasesTheWaitersAtOnce) {
  ReplicaCollectives c(nullptr, 2, 0, 2, 60s);
  auto waiter = std::async(std::launch::async, [&] { return allReduceFrom(c, 0, {1, 2}); });
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  {
    // Replica 1's program throws before it reaches the collective.
    try {
      const device::ReplicaScope scope(c, 1, true);
      throw error("replica 1's kernel failed");
    } catch (const error&) {
    }
  }
  expectError([&] { waiter.get(); },
              {"test op", "local replica 1 (global replica 1) stopped with an error"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // Every replica left: the next run starts clean.
  auto a = std::async(std::launch::async, [&] { return allReduceFrom(c, 0, {1, 2}); });
  auto b = std::async(std::launch::async, [&] { return allReduceFrom(c, 1, {10, 20}); });
  EXPECT_EQ(a.get(), (std::vector<float>{11, 22}));
  EXPECT_EQ(b.get(), (std::vector<float>{11, 22}));
}

TEST(ReplicaRendezvous, DifferentCollectivesOnTheReplicasAreAMismatch) {
  ReplicaCollectives c(nullptr, 2, 0, 2, 10s);
  auto a = std::async(std::launch::async, [&] { return allReduceFrom(c, 0, {1, 2}); });
  auto b = std::async(std::launch::async, [&] { return allReduceFrom(c, 1, {1, 2, 3}); });
  expectError([&] { a.get(); },
              {"issued different collectives", "2 FLOAT elements", "3 FLOAT elements"});
  expectError([&] { b.get(); }, {"issued different collectives"});
}

TEST(ReplicaRendezvous, ManyRoundsInARow) {
  ReplicaCollectives c(nullptr, 3, 0, 3, 10s);
  auto body = [&](int64_t r) {
    const device::ReplicaScope scope(c, r, true);
    float total = 0;
    for (int round = 0; round < 200; ++round) {
      const HostTensor in = vec({static_cast<float>(r + round)});
      HostTensor out(in.info());
      c.allReduce(r, in, out, ReplicaGrouping(3), CollectiveOperator::Add, "round");
      total += out.toVector<float>()[0];
    }
    return total;
  };
  auto a = std::async(std::launch::async, body, 0);
  auto b = std::async(std::launch::async, body, 1);
  auto d = std::async(std::launch::async, body, 2);
  // sum over rounds of (3 * round + 0 + 1 + 2)
  const float want = 3.0f * 199.0f * 200.0f / 2.0f + 3.0f * 200.0f;
  EXPECT_EQ(a.get(), want);
  EXPECT_EQ(b.get(), want);
  EXPECT_EQ(d.get(), want);
}

TEST(ReplicaRendezvous, CollectiveKernelsNeedAReplica) {
  // A program run outside a session has no replicas to meet.
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "ReplicatedAllReduce", in, {}, 1, ir::kGraphcoreDomain);
            },
            {vec({1, 2})});
      },
      {"ReplicatedAllReduce", "no replica is running on this thread"});
}

// Runs the Forward program of `graph` on `replicas` threads (one lowered copy each), replica r fed
// inputs[r] into stream `x`; returns output `y` of every replica.
std::vector<std::vector<float>> runOnThreads(const ir::Graph& graph, int64_t replicas,
                                             const TensorId& x, const TensorId& y,
                                             const std::vector<std::vector<float>>& inputs) {
  ReplicaCollectives c(nullptr, replicas, 0, replicas, 10s);
  std::vector<std::future<std::vector<float>>> results;
  for (int64_t r = 0; r < replicas; ++r) {
    results.push_back(std::async(std::launch::async, [&, r] {
      session::LoweredGraph lowered(graph);
      auto buffers = lowered.makeBuffers();
      buffers[static_cast<size_t>(lowered.bufferIndex(x))] = vec(inputs[static_cast<size_t>(r)]);
      const device::ReplicaScope scope(c, r, true);
      lowered.run(ir::Phase::Forward, buffers, 1);
      return buffers[static_cast<size_t>(lowered.bufferIndex(y))].toVector<float>();
    }));
  }
  std::vector<std::vector<float>> out;
  for (auto& f : results) out.push_back(f.get());
  return out;
}

// With the graph's replication factor known, CommGroup All is a group of every replica.
TEST(ReplicaRendezvous, AllReplicasGroupFromTheGraphsReplicationFactor) {
  ir::Graph g;
  g.setReplicationFactor(4);
  g.addTensor("x", TensorInfo(DataType::FLOAT, {5}), ir::TensorKind::Stream);
  const TensorId rs = addOp(g, "ReplicatedReduceScatter", {"x"}, {}, 1, ir::kGraphcoreDomain)[0];
  const TensorId ag = addOp(g, "ReplicatedAllGather", {rs}, {}, 1, ir::kGraphcoreDomain)[0];
  EXPECT_EQ(g.tensor(rs).info.shape(), (Shape{2}));
  EXPECT_EQ(g.tensor(ag).info.shape(), (Shape{8}));
  const std::vector<std::vector<float>> in = {
      {1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}, {100, 200, 300, 400, 500}, {0, 0, 0, 0, 1000}};
  const auto scattered = runOnThreads(g, 4, "x", rs, in);
  EXPECT_EQ(scattered[0], (std::vector<float>{111, 222}));
  EXPECT_EQ(scattered[1], (std::vector<float>{333, 444}));
  EXPECT_EQ(scattered[2], (std::vector<float>{1555, 0}));
  EXPECT_EQ(scattered[3], (std::vector<float>{0, 0}));
  const auto gathered = runOnThreads(g, 4, "x", ag, in);
  for (const auto& v : gathered)
    EXPECT_EQ(v, (std::vector<float>{111, 222, 333, 444, 1555, 0, 0, 0}));
}

// A graph built for 4 replicas cannot run on 2: the shapes were inferred for groups of 4.
TEST(ReplicaRendezvous, AGraphBuiltForOtherReplicasIsRefused) {
  ir::Graph g;
  g.setReplicationFactor(4);
  g.addTensor("x", TensorInfo(DataType::FLOAT, {4}), ir::TensorKind::Stream);
  const TensorId rs = addOp(g, "ReplicatedReduceScatter", {"x"}, {}, 1, ir::kGraphcoreDomain)[0];
  expectError(
      [&] {
        runOnThreads(g, 2, "x", rs, {{1, 2, 3, 4}, {1, 2, 3, 4}});
      },
      {"ReplicatedReduceScatter", "built for groups of 4 replicas", "the group has 2"});
}

}  // namespace
}  // namespace xtrain::testing
