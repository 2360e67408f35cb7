// Inserts an optimizer into a differentiated graph: gradient accumulators (when af > 1), the
// accumulation ops, and one update op per weight. The session reduces the "reduced" tensor of every
// weight across replicas between the Accumulate and Update phases (docs/replication-semantics.md
// section 2).
//
// Hyperparameters live in a small FLOAT tensor per weight (`hyper`), so that non-constant values
// can change between runs (updateOptimizerFromHost) without rebuilding; hyperValues() computes its
// contents. Its layout is named per family in common/optimizer_hyper.hpp (SgdHyper, AdamHyper,
// AdaptiveHyper), which the kernels read it by: first the entries common to every optimizer, the
// gradient scale and the clipping factor (CommonHyper; 1 unless the session's clipping sets it each
// step), then the rule's own values.
#pragma once
#pragma GCC visibility push(default)

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
  // SessionOptions::enableStochasticRounding: FLOAT16 weights and state are rounded stochastically
  // when the update stores them.
  bool stochasticRounding = false;

  int64_t replicasFor(const TensorId& weight) const {
    auto it = replicasOfWeight.find(weight);
    return it == replicasOfWeight.end() ? globalReplicationFactor : it->second;
  }
};

// One optimizer state tensor of a weight.
struct StateTensor {
  std::string slot;  // its checkpoint slot (docs/optimizers.md section 8): velocity, m, v, ...
  TensorId id;       // the graph tensor
  std::string
      initializerName;  // PopART's name, e.g. Accl1___W, which an ONNX initializer may carry
  bool perElement =
      true;  // follows the weight (shape, groups, shards); false: a scalar (Adam's step)
};

struct WeightUpdate {
  TensorId weight;
  TensorId grad;         // the gradient produced by the backward pass (one micro-batch)
  TensorId accumulator;  // empty when af == 1
  // What is reduced across replicas before the update, always FLOAT: the accumulator, the gradient,
  // (FLOAT16 weights without accumulation) the gradient cast to FLOAT, or (a FLOAT16 accumulator) a
  // FLOAT tensor the session fills from the accumulator, clearing it.
  TensorId reduced;
  TensorId hyper;  // hyperparameter tensor
  std::vector<StateTensor>
      state;  // the optimizer's state tensors of this weight (empty for plain SGD)
  // Lamb on a shard: the FLOAT[2] partial sums of squares (of the weight and of its update) over
  // this shard, which the session sums over the shard's group between the Update and Apply phases;
  // empty otherwise (a whole weight's update computes its norms itself).
  TensorId lambNorms;
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

// Contents of a weight's hyper tensor for the given optimizer: {gradScale, clipFactor = 1, the
// rule's values...}, where gradScale = 1/lossScaling, times 1/(af·G) (G: replicasFor(weight)) for a
// Mean reduction with the Post strategy.
// `lossScaling` is the factor in force (the optimizer's, or automatic loss scaling's current one).
std::vector<float> hyperValues(const Optimizer& optimizer, const TensorId& weight,
                               const OptimizerTransformOptions& options, float lossScaling);

// Every state tensor of a weight, its accumulator included (slot "accumulator", Accum___<w>).
std::vector<StateTensor> stateWithAccumulator(const WeightUpdate& update);

// The initializer name of a weight's state under PopART's prefix ("Accl1" -> "Accl1___<weight>").
std::string stateInitializerName(const std::string& prefix, const TensorId& weight);

// Throws xtrain::error naming the hyperparameter and weight when `next` changes a value `current`
// declared constant, or changes the optimizer type, its mode or the set of weights that keep state.
void checkOptimizerUpdate(const Optimizer& current, const Optimizer& next,
                          const std::vector<TensorId>& weights);

}  // namespace xtrain::ir

#pragma GCC visibility pop
