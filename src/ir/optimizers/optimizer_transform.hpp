// Inserts an optimizer into a differentiated graph: gradient accumulators (when af > 1), the
// accumulation ops, and one update op per weight. The session reduces the "reduced" tensor of every
// weight across replicas between the Accumulate and Update phases (replication-semantics.md section
// 2).
//
// Hyperparameters live in a small FLOAT tensor per weight (`hyper`), so that non-constant values
// can change between runs (updateOptimizerFromHost) without rebuilding; hyperValues() computes its
// contents.
#pragma once

#include <map>
#include <vector>

#include "ir/graph.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::ir {

struct OptimizerTransformOptions {
  int64_t accumulationFactor = 1;
  int64_t globalReplicationFactor = 1;
  ReductionType reduction = ReductionType::Sum;
  MeanReductionStrategy strategy = MeanReductionStrategy::Post;
  // Replicas whose gradients a weight's reduction combines, for weights whose VariableSettings
  // give them groups smaller than all replicas (the group size); others: globalReplicationFactor.
  std::map<TensorId, int64_t> replicasOfWeight;
  // Weights updated on a shard (replicated tensor sharding): the shard's element count. Their
  // optimizer state is a 1-D tensor of that many elements, and their update reads and writes the
  // 1-D weightShard and gradShard tensors, which the session fills before the Update phase and
  // gathers from after it.
  std::map<TensorId, int64_t> shardElements;

  int64_t replicasFor(const TensorId& weight) const {
    auto it = replicasOfWeight.find(weight);
    return it == replicasOfWeight.end() ? globalReplicationFactor : it->second;
  }
};

struct WeightUpdate {
  TensorId weight;
  TensorId grad;         // the gradient produced by the backward pass (one micro-batch)
  TensorId accumulator;  // empty when af == 1
  TensorId reduced;      // what is reduced across replicas before the update: accumulator or grad
  TensorId hyper;        // hyperparameter tensor
  TensorId velocity;     // empty when the weight keeps no velocity
  // Replicated tensor sharding (empty / 0 when the weight is updated whole).
  TensorId weightShard;
  TensorId gradShard;
  int64_t shardElements = 0;
};

struct OptimizerGraph {
  std::vector<WeightUpdate> updates;
  // FLOAT scalar the session sets to the micro-batch index (0..af-1) before each Accumulate phase.
  TensorId accumulationIndex;
  // Whether the cross-replica reduction of `reduced` is a mean (Mean with the Running strategy) or
  // a sum.
  bool replicaReductionIsMean = false;
};

OptimizerGraph applyOptimizer(Graph& graph, const Optimizer& optimizer,
                              const std::map<TensorId, TensorId>& gradOfWeight,
                              const OptimizerTransformOptions& options);

// Contents of a weight's hyper tensor for the given optimizer (SGD: lr, wd, mm, dm, vs, gradScale,
// where gradScale = 1/lossScaling, times 1/(af·G) (G: replicasFor(weight)) for a Mean reduction
// with the Post strategy).
std::vector<float> hyperValues(const Optimizer& optimizer, const TensorId& weight,
                               const OptimizerTransformOptions& options);

// Throws xtrain::error naming the hyperparameter and weight when `next` changes a value `current`
// declared constant, or changes the optimizer type or the set of weights that keep state.
void checkOptimizerUpdate(const Optimizer& current, const Optimizer& next,
                          const std::vector<TensorId>& weights);

}  // namespace xtrain::ir
