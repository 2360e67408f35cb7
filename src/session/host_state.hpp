// HostState: the host's side of a session's weights and optimizer state. It keeps the host views
// (one whole value per weight or optimizer state: grouped tensors with their [groups] dimension,
// sharded state whole and unpadded), the bookkeeping of which weights are grouped
// (VariableSettings) or sharded (replicated tensor sharding) and of the optimizer state that
// follows them, the optimizer state the model carried as initializers, and what a checkpoint
// holds of the session's tensors.
//
// Contract: the views exist from createViews (prepareDevice) on; before that the calls that read
// or write them find nothing. toReplicas and fromReplicas move the views to and from every local
// replica through the replication layer (a collective for grouped and sharded tensors, in the
// same order on every instance, so every instance calls them together); the others touch the
// host only. Not thread-safe: the session's thread uses it.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "replication/grouped_variable.hpp"
#include "replication/replica_exchange.hpp"
#include "replication/sharding.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/stepio.hpp"

namespace xtrain::session {

class HostState {
 public:
  // Grouped weights' initial values ([groups] + shape) as the model import gives them.
  explicit HostState(std::map<TensorId, HostTensor> groupedValues = {})
      : groupedValues_(std::move(groupedValues)) {}

  // At session creation: every weight's VariableSettings in the model metadata, checked against
  // the replicas (a clear error when the groups do not divide them); the weights they give more
  // than one group are the grouped ones.
  void collectVariableSettings(const ir::Graph& graph,
                               const std::map<std::string, std::string>& metadata,
                               const replication::ReplicaLayout& layout);
  // Training: the model's initializers that hold optimizer state under PopART's names (Accl___W,
  // Accum___W of a weight W, unused by any op) leave the graph, kept here until applied.
  void takeOptimizerStateInitializers(ir::Graph& graph);
  // Training, before the optimizer is added: which of the trained weights (id, elements) are
  // updated on shards (SessionOptions' tensor location settings).
  void planSharding(const SessionOptions& options,
                    const std::vector<std::pair<TensorId, int64_t>>& trained,
                    int64_t globalReplicas);
  // After the optimizer is added: a grouped weight's optimizer state and accumulator are grouped
  // too, a sharded weight's per-element state is sharded.
  void followUpdates(const ir::OptimizerGraph& updates);

  // prepareDevice: a view of every weight and optimizer state from the graph's values (the
  // grouped weights' initial values, zeros for sharded state), then the state initializers taken
  // above (they must fit the state and come from the same optimizer mode).
  void createViews(const ir::Graph& graph);
  // `optimizer`: null in an inference session (which takes no state initializers).
  void applyOptimizerStateInitializers(const ir::OptimizerGraph& updates,
                                       const std::map<std::string, std::string>& metadata,
                                       const Optimizer* optimizer);

  // weightsFromHost: every view into every local replica (its group, its shard).
  void toReplicas(replication::LocalReplicas& replicas, const replication::ReplicaLayout& layout);
  // weightsToHost: every view made whole from the replicas (and the other instances).
  void fromReplicas(replication::ReplicaExchange& exchange, replication::LocalReplicas& replicas);
  // The view of `id` made whole (sharded state gathered, grouped tensors assembled), or, for a
  // tensor that is the same on every replica, replica 0's buffer itself.
  HostTensor& whole(const TensorId& id, replication::ReplicaExchange& exchange,
                    replication::LocalReplicas& replicas);
  // broadcastWeights: every view's tensor from instance rootRank (checked) on every replica.
  void broadcast(replication::ReplicaExchange& exchange, int rootRank);

  // readWeights and writeWeights: the user's buffers from and into the views (grouped tensors in
  // their retrieval shape); throws naming a tensor the session does not have or a wrong buffer.
  void readWeights(const WeightsIO& weights) const;
  void writeWeights(const WeightsIO& weights);
  // resetHostWeights: the weights' views from the initializers of `model`.
  void resetFromModel(const ir::Graph& graph, const std::string& model, bool ignoreMissing);
  // modelToHost: the weights' values and the optimizer state initializers the model came with
  // (always brought up to date); `extra` gets the state it did not come with when
  // withOptimizerState.
  std::map<TensorId, HostTensor> modelValues(const ir::Graph& graph,
                                             const ir::OptimizerGraph& updates,
                                             bool withOptimizerState,
                                             std::map<TensorId, HostTensor>& extra) const;
  bool hasStateInitializers() const { return !stateInitializers_.empty(); }

  // Checkpoints (docs/checkpoint-format.md): the host-visible tensors a checkpoint holds, with
  // their dataset paths; the check that a checkpoint's datasets fit this session's tensors
  // (throws naming the first that does not); installing them into the views (an accumulator the
  // checkpoint lacks is zero).
  static std::vector<std::pair<TensorId, std::string>> checkpointTensors(
      const ir::Graph& graph, const ir::OptimizerGraph& updates);
  void checkCheckpointTensors(const std::string& path, const checkpoint::Contents& contents,
                              const std::vector<std::pair<TensorId, std::string>>& tensors) const;
  void installCheckpointTensors(checkpoint::Contents& contents,
                                const std::vector<std::pair<TensorId, std::string>>& tensors);

  // What the exchange reduces after each batch: the updates' gradients by their weights' kinds
  // (plain ones over all replicas, in update order; grouped ones over their groups; sharded ones
  // by a reduce-scatter over their domain).
  replication::GradientPlan gradientPlan(const ir::OptimizerGraph& updates) const;
  // The bookkeeping, for the training graph, the gradient reduction and the memory accounting.
  const std::map<TensorId, replication::GroupedVariable>& grouped() const { return grouped_; }
  const std::map<TensorId, replication::ShardPlan>& shards() const { return shards_; }
  // The views by id (the update control writes the hyperparameter values into them).
  std::map<TensorId, HostTensor>& views() { return views_; }

 private:
  // Host views of weights and optimizer state ([groups] + shape for grouped ones).
  std::map<TensorId, HostTensor> views_;
  // Grouped weights and their optimizer state, and the weights' initial values ([groups] + shape).
  std::map<TensorId, replication::GroupedVariable> grouped_;
  std::map<TensorId, HostTensor> groupedValues_;
  // Every weight's VariableSettings from the model metadata.
  std::map<TensorId, VariableSettings> variableSettings_;
  // Ungrouped weights (one group) retrieved with VariableRetrievalMode::AllReplicas: the number of
  // replicas; readWeights and writeWeights take [replicas] + shape for them, every replica's copy
  // being the same weight.
  std::map<TensorId, int64_t> allReplicasRetrieval_;
  // Weights updated on shards, and their sharded optimizer state (by state id: the weight's id).
  std::map<TensorId, replication::ShardPlan> shards_;
  std::map<TensorId, TensorId> shardedState_;
  // The model's optimizer state initializers, by initializer name.
  std::map<TensorId, HostTensor> stateInitializers_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
