// ReplicaExchange: what the replicas of a session exchange between their steps
// (docs/replication-semantics.md sections 2, 4 and 5), whatever runs them.
//
// A session hands it two things: its local replicas (a buffer per (replica, tensor) and a way to
// run work on every replica's thread) and the instances' communicator (null with one instance). The
// exchange is hierarchical: the local replicas are combined in this instance's memory first, then,
// with several instances, across them through the communicator, so cross-instance traffic does not
// grow with the local replicas.
//
// Gradients (reduceGradients), after every replica's backward pass of a step:
//  - plain weights: each replica's `reduced` tensor becomes the sum (or mean) over all replicas,
//    the local sum bucketed across the instances by a GradientReducer;
//  - grouped weights (VariableSettings with several groups): the sum (or mean) over the replicas of
//    each replica's group;
//  - sharded weights: the sum (or mean) over all replicas, scattered into each replica's gradient
//    shard; the replica's weight shard is cut from its whole weight, its accumulator cleared.
// Weights: gatherShardedWeights after the update (the updated shards become every replica's whole
// weight), broadcast* from one instance to all, gatherShards and groupedToHost for the host views.
//
// Every method that communicates must be called by every instance in the same order (the
// communicator's ordering contract); comm errors propagate as thrown by the communicator. All
// gradient tensors are FLOAT. Not thread-safe: one call at a time, from the session's thread.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "replication/gradient_reducer.hpp"
#include "replication/grouped_variable.hpp"
#include "replication/replica_layout.hpp"
#include "replication/sharding.hpp"
#include "xtrain/names.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::replication {

// The local replicas of a session, as the exchange sees them.
class LocalReplicas {
 public:
  // Replica `localReplica`'s buffer of tensor `id` (it must exist).
  virtual HostTensor& buffer(int64_t localReplica, const TensorId& id) = 0;
  // Calls fn(r) for every local replica r and returns when all returned, possibly concurrently
  // (each on replica r's thread): callers only write slices that no other call touches.
  virtual void forEach(const std::function<void(int64_t)>& fn) = 0;

 protected:
  ~LocalReplicas() = default;
};

struct GroupedGradient {
  TensorId weight;   // for messages
  TensorId reduced;  // each replica's gradient (or accumulator), reduced over its group
  GroupedVariable variable;
};

struct ShardedGradient {
  TensorId weight;
  TensorId reduced;      // the whole gradient, plan.elements
  TensorId gradShard;    // the replica's shard of the reduced gradient, plan.shard
  TensorId weightShard;  // the replica's shard of the weight, cut before the update
  TensorId accumulator;  // cleared after the reduction (empty: none)
  ShardPlan plan;
};

// Which gradients reduceGradients reduces, and how.
struct GradientPlan {
  // Reduced over all replicas; in the order the updates run (the backward pass produces them in
  // the reverse order, which is the order of the buckets).
  std::vector<TensorId> plain;
  std::vector<GroupedGradient> grouped;
  std::vector<ShardedGradient> sharded;
  // Mean: divide by the replicas of the reduction (all, or the group's); else the sum.
  bool mean = false;
};

class ReplicaExchange {
 public:
  // `replicas` must outlive the exchange; its buffers must exist (the plan's tensors among them).
  // bucketBytes: the GradientReducer's bucket size for plain gradients across instances.
  ReplicaExchange(ReplicaLayout layout, std::shared_ptr<comm::Communicator> instances,
                  LocalReplicas& replicas, GradientPlan plan, size_t bucketBytes);

  const ReplicaLayout& layout() const { return layout_; }
  // The instances' communicator (null with one instance).
  const std::shared_ptr<comm::Communicator>& instances() const { return instances_; }
  int instanceCount() const { return instances_ ? static_cast<int>(layout_.instances()) : 1; }

  // Plain gradient `reduced` is final on replica 0 (one local replica, no accumulation): its
  // bucket's all-reduce across the instances may start, overlapping the rest of the backward pass.
  // Only with one local replica; the same tensors in the same order on every instance.
  void gradientReady(const TensorId& reduced);
  // Every gradient of the plan reduced as described above.
  void reduceGradients();
  // The seconds the last reduceGradients spent on each kind of gradient (for the session's
  // profile: one communicator each).
  struct ReductionSeconds {
    double grouped = 0;
    double sharded = 0;
    double plain = 0;
  };
  const ReductionSeconds& lastReductionSeconds() const { return lastReduction_; }
  // The bucketed reduction of plain gradients across instances (null with one instance).
  const GradientReducer* reducer() const { return reducer_.get(); }
  // After the update: each sharded weight's updated shards gathered into every replica's weight.
  void gatherShardedWeights();

  // The whole plan.elements of a sharded tensor (a weight shard or optimizer state, FLOAT or
  // FLOAT16, the type of its buffers) from the shards of the domain's first group, on every
  // instance, into `whole`.
  void gatherShards(const ShardPlan& plan, const TensorId& shardId, void* whole);
  // A grouped tensor's complete host view ([groups] + shape): each group from its lowest replica,
  // wherever it is.
  void groupedToHost(const TensorId& id, const GroupedVariable& v, HostTensor& hostView);

  // broadcastWeights (rootRank: an instance): every local replica's tensor `id` takes the root
  // instance's replica 0 value (plain), the root's whole sharded value cut into shards, or, for a
  // grouped tensor, the root's value of each group the root holds a member of (other groups keep
  // theirs).
  void broadcastPlain(const TensorId& id, int rootRank);
  void broadcastSharded(const TensorId& id, const ShardPlan& plan, int rootRank);
  void broadcastGrouped(const TensorId& id, const GroupedVariable& v, int rootRank);

  // For each item k (a shard plan and `width` values per local replica, read by `partial`), the
  // sum of the partials over the shards of the plan's domain (its first group's members), across
  // the instances: one all-reduce for all items. Returns items x width sums.
  std::vector<double> sumOverShards(
      const std::vector<const ShardPlan*>& plans, size_t width,
      const std::function<void(size_t item, int64_t local, double* out)>& partial);
  // True on every instance when `value` is true on every instance (`what` names the exchange).
  bool trueOnAllInstances(bool value, const char* what);
  // `values` summed element-wise over the instances (FLOAT; unchanged with one instance).
  void sumOnAllInstances(std::vector<float>& values, const char* what);

 private:
  HostTensor& buffer(int64_t local, const TensorId& id) { return replicas_.buffer(local, id); }
  float* floats(int64_t local, const TensorId& id) { return buffer(local, id).data<float>(); }
  void moveGradientsToSharedMemory();
  void reducePlain();
  void reduceGrouped(const GroupedGradient& g);
  void reduceSharded(const ShardedGradient& g);
  // Domain All across instances with several local replicas: the local sum `sum` reduce-scattered
  // through a padded copy, each local replica's shard copied out of this instance's part.
  void reduceScatterLocalShards(const ShardedGradient& g, float* sum, const std::string& debugName);
  // Elements [begin, end) of replica `to`'s tensor `id` plus the same of each of `from`.
  void addReplicas(const TensorId& id, int64_t to, const std::vector<int64_t>& from, int64_t begin,
                   int64_t end);
  // Elements [begin, end) of replica `from`'s tensor `id` copied to each of `to` (any type).
  void copyReplicas(const TensorId& id, int64_t from, const std::vector<int64_t>& to, int64_t begin,
                    int64_t end);
  float meanScale(int64_t replicas) const;

  ReplicaLayout layout_;
  std::shared_ptr<comm::Communicator> instances_;
  LocalReplicas& replicas_;
  GradientPlan plan_;
  std::vector<int64_t> others_;  // local replicas 1..L-1
  std::unique_ptr<GradientReducer> reducer_;
  ReductionSeconds lastReduction_;
};

}  // namespace xtrain::replication

#pragma GCC visibility pop
