// Replicated tensor sharding (docs/replication-semantics.md section 5): which weights a session
// updates on shards, over which domain, and the layout arithmetic of their shards.
//
// A sharded weight of n elements over a domain whose groups have k replicas is updated in shards of
// s = ceil(n / k) elements: replica r updates shard indexInGroup(r) (elements [i s, (i + 1) s) of
// the flattened weight; the last shard is zero-padded). Its optimizer state holds only that shard.
// The gradient is reduced over all replicas and scattered into shards before the update; the
// updated shards are gathered into the whole weight after it. The host always sees whole, unpadded
// tensors.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/names.hpp"
#include "xtrain/replicagrouping.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/variablesettings.hpp"

namespace xtrain::replication {

struct ShardPlan {
  ReplicaGrouping domain;  // over the global replicas; a replica's shard is its index in its group
  int64_t elements = 0;    // n, the weight's elements
  int64_t shard = 0;       // s = ceil(n / k)
  bool weightStored = false;  // the weight itself is kept as a shard (weightTensorLocationSettings)

  int64_t shardCount() const { return domain.getGroupSize(); }
  int64_t shardOf(int64_t globalReplica) const { return domain.getIndexInGroupAt(globalReplica); }
};

// The weights to update on shards, from the tensor location settings: a weight is sharded when
// optimizer-state sharding is on and it has at least optimizerStateTensorLocationSettings'
// minElementsForReplicatedTensorSharding elements, or weight sharding is on and it has at least the
// weight settings' minimum. Throws xtrain::error, naming the weight, for what cannot be sharded: a
// weight whose VariableSettings domain is None (each replica its own value: there is nothing to
// share) or that has several groups (not supported yet), a sharding domain that does not divide the
// replicas, weight and optimizer-state sharding over different domains, and sharded accumulators
// with gradient accumulation (not supported yet).
// `weights`: the trained weights with their numbers of elements.
std::map<TensorId, ShardPlan> planSharding(const SessionOptions& options,
                                           const std::vector<std::pair<TensorId, int64_t>>& weights,
                                           const std::map<TensorId, VariableSettings>& settings,
                                           int64_t globalReplicas);

// Copies shard `index` of a whole n-element tensor into `shard` (s elements, zero-padded); elements
// of `elementSize` bytes (FLOAT weights and state, FLOAT16 ones).
void copyShardOut(const void* whole, int64_t n, int64_t s, int64_t index, void* shard,
                  size_t elementSize = sizeof(float));
// Copies the valid part of shard `index` back into a whole n-element tensor.
void copyShardIn(const void* shard, int64_t n, int64_t s, int64_t index, void* whole,
                 size_t elementSize = sizeof(float));

}  // namespace xtrain::replication

#pragma GCC visibility pop
