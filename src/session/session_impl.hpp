// SessionImpl: what Session, TrainingSession and InferenceSession do. The one place that sees the
// IR, the device and the host buffers together.
//
// Replicas: L local replicas each own a buffer table (weights, optimizer state, activations) built
// from one LoweredGraph, and run on their own threads (ReplicaPool). Micro-batches go to all
// replicas at once; after each step's micro-batches the gradients (or accumulators) are reduced
// hierarchically (across the local replicas, then, with distributed replicated graphs, across the
// instances through the comm layer), then every replica applies the same update.
#pragma once
#pragma GCC visibility push(default)

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "session/gradient_reducer.hpp"
#include "session/grouped_variables.hpp"
#include "session/lowered_graph.hpp"
#include "session/replica_collectives.hpp"
#include "session/replica_pool.hpp"
#include "session/sharding.hpp"
#include "xtrain/checkpoint.hpp"
#include "xtrain/dataflow.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/stepio.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::session {

struct SessionConfig {
  std::string model;  // ONNX path or bytes
  DataFlow dataFlow;
  std::shared_ptr<DeviceInfo> device;
  std::map<TensorId, TensorInfo> inputShapes;
  SessionOptions options;
  // Training only:
  bool training = false;
  TensorId loss;
  std::unique_ptr<Optimizer> optimizer;
};

class SessionImpl {
 public:
  explicit SessionImpl(SessionConfig config);
  ~SessionImpl();

  void prepareDevice();
  void weightsFromHost();
  void weightsToHost();
  void broadcastWeights(int rootRank);
  void readWeights(const WeightsIO& weights);
  void writeWeights(const WeightsIO& weights);
  void run(IStepIO& stepio, const std::string& debugName);
  void modelToHost(const std::string& path, bool withOptimizerState);
  void resetHostWeights(const std::string& model, bool ignoreMissing);
  void updateOptimizerFromHost(const Optimizer& optimizer);
  // Checkpoints (session_checkpoint.cpp; TrainingSession's contract in xtrain/session.hpp).
  void saveCheckpoint(const std::string& path, const CheckpointOptions& options);
  CheckpointInfo loadCheckpoint(const std::string& path);
  std::optional<CheckpointInfo> loadLatestCheckpoint(const std::string& directory);
  void waitForCheckpoint();

  const ir::Graph& graph() const { return *graph_; }
  const SessionOptions& options() const { return config_.options; }
  const DataFlow& dataFlow() const { return config_.dataFlow; }
  std::shared_ptr<DeviceInfo> device() const { return config_.device; }
  std::string summaryReport() const;
  // Where run() spent its time: compute, the gradient reduction across replicas, the update.
  std::string stepTimeReport() const;

  Shape inputBufferShape(const TensorId& id) const;
  Shape anchorBufferShape(const TensorId& id) const;

  void setRandomSeed(uint64_t seed);
  uint64_t randomSeed() const { return seed_; }
  std::vector<uint32_t> rngState() const;
  void setRngState(const std::vector<uint32_t>& state);

  int64_t localReplicas() const { return localReplicas_; }
  int64_t globalReplicas() const { return globalReplicas_; }
  int64_t replicaOffset() const { return replicaOffset_; }
  int64_t accumulationFactor() const { return accumulationFactor_; }
  // Steps run so far.
  int64_t stepCount() const { return stepCount_; }
  float lossScaling() const { return lossScaling_; }
  int64_t skippedSteps() const { return skippedSteps_; }

 private:
  void validateOptions() const;
  // Records the weights whose VariableSettings give them more than one group (grouped_), after
  // checking every weight's settings against the replicas.
  void collectVariableSettings();
  // After the optimizer is in the graph: a grouped weight's optimizer state and accumulator follow
  // it.
  void groupOptimizerState();
  // Sums each grouped weight's reduced gradient over the replicas of its group (local members
  // first, then across instances when a group spans them), then scales for the mean and copies it
  // to every local member.
  void reduceGroupedAcrossReplicas();
  // Fills a grouped tensor's complete host view: groups with a member here from it, the others from
  // the instances that hold them.
  void groupedToHost(const TensorId& id, HostTensor& hostView);
  // Replicated tensor sharding. Before the update: the reduced gradient of every sharded weight is
  // summed over all replicas and scattered into each replica's gradient shard (a reduce-scatter
  // across the instances when the domain is All), and each replica's weight shard is cut from its
  // weight. After it: the updated shards are gathered into the whole weight on every replica.
  void reduceShardedGradients();
  void gatherShardedWeights();
  // Gradient clipping (docs/optimizers.md section 5): for each clip group, the global norm of its
  // weights' reduced, unscaled gradients (summed over shards for sharded weights), and the factor
  // maxNorm / max(maxNorm, norm) written into each weight's hyper tensor on every local replica.
  void clipGradients();
  // Automatic loss scaling (loss_scaling.cpp): whether every reduced gradient element (every
  // replica, shard and instance) is finite; skipping a step's update (accumulators cleared, the
  // scale backed off); counting a finite step (the scale grows after growthInterval of them).
  bool gradientsAreFinite();
  void skipUpdate();
  void countFiniteStep();
  // Writes every weight's hyper tensor and the loss scaling seed from the optimizer and
  // lossScaling_.
  void writeHyperValues();
  // Lamb on shards: sums each sharded Lamb weight's partial norms over its shard group and writes
  // the totals into every local replica's lambNorms, for the Apply phase.
  void completeLambNorms();
  // For each item (a shard plan and `width` values per local replica, read by `partial`), the sum
  // of the partials over the shards of the plan's domain (its first group's members), across the
  // instances: one all-reduce for all items. Returns items x width sums.
  std::vector<double> sumOverShards(
      const std::vector<const ShardPlan*>& plans, size_t width,
      const std::function<void(size_t item, int64_t local, double* out)>& partial);
  // The whole n elements of a sharded tensor (a weight shard or optimizer state) from the shards
  // of the domain's first group, on every instance.
  // `whole` has the shard's element type (FLOAT or FLOAT16).
  void gatherShards(const ShardPlan& plan, const TensorId& shardId, void* whole);
  // Training: the model's initializers that hold optimizer state under PopART's names (Accl___W,
  // Accum___W of a weight W, unused by any op) leave the graph; prepareDevice starts the state from
  // them.
  void takeOptimizerStateInitializers();
  void applyOptimizerStateInitializers();
  // A hash of the model's operations and weights (names, types, per-replica shapes): what a
  // checkpoint must have been written for.
  std::string computeGraphFingerprint() const;
  // The host-visible tensors a checkpoint holds, with their dataset paths.
  std::vector<std::pair<TensorId, std::string>> checkpointTensors() const;
  // Throws naming the first way a checkpoint's contents do not fit this session (a missing or
  // differently shaped tensor, another optimizer mode, another model, no random state).
  void checkCheckpointContents(const std::string& path, const checkpoint::Contents& c) const;
  // The rest of loadCheckpoint once this instance read `c` (or failed to: `failure`): checks it,
  // agrees with the other instances that all of them can load the same checkpoint, installs it.
  CheckpointInfo loadCheckpointContents(const std::string& path, checkpoint::Contents c,
                                        std::string failure);
  // broadcastWeights for a grouped tensor.
  void broadcastGrouped(const TensorId& id, const GroupedVariable& v, int rootRank);
  // The lowest local replica of a group, or -1 when this instance holds none of its members.
  int64_t firstLocalMember(const GroupedVariable& v, int64_t group) const;
  void checkLoss() const;
  void buildTrainingGraph();
  void computeMemory();
  void requirePrepared(const char* what) const;
  HostTensor& replicaBuffer(int64_t replica, const TensorId& id);
  void reduceAcrossReplicas();
  // FLOAT16 gradient accumulators: each replica's accumulator converted into its FLOAT `reduced`
  // tensor and cleared, before the reduction.
  void takeHalfAccumulators();
  // The communicator of the instances (one rank per instance) when replication is distributed.
  void joinInstances();
  // Persistent tensors the host keeps a copy of (weights and optimizer state), by id.
  bool isHostVisible(const ir::Tensor& t) const;

  SessionConfig config_;
  std::unique_ptr<ir::Graph> graph_;
  std::string modelBytes_;
  std::map<std::string, std::string> modelMetadata_;
  std::unique_ptr<LoweredGraph> lowered_;
  std::vector<std::vector<HostTensor>> replicas_;
  // Host views of weights and optimizer state ([groups] + shape for grouped ones).
  std::map<TensorId, HostTensor> hostWeights_;
  // Grouped weights and their optimizer state, and the weights' initial values ([groups] + shape).
  std::map<TensorId, GroupedVariable> grouped_;
  std::map<TensorId, HostTensor> groupedValues_;
  // Every weight's VariableSettings from the model metadata.
  std::map<TensorId, VariableSettings> variableSettings_;
  // Weights updated on shards, and their sharded optimizer state (by state id: the weight's id).
  std::map<TensorId, ShardPlan> shards_;
  std::map<TensorId, TensorId> shardedState_;
  // The updates whose weights are neither grouped nor sharded (reduced over all replicas).
  std::vector<const ir::WeightUpdate*> plainUpdates_;
  // The optimizer's clip groups, resolved to the updates of their weights.
  struct ClipGroup {
    float maxNorm = 0;
    std::vector<const ir::WeightUpdate*> updates;
  };
  std::vector<ClipGroup> clipGroups_;
  bool hasApplyPhase_ = false;
  // The loss scaling factor in force (automatic loss scaling changes it), the finite steps in a row
  // since it last changed, the updates skipped, and its ceiling (2^15 with FLOAT16).
  float lossScaling_ = 1.0f;
  int64_t goodSteps_ = 0;
  int64_t skippedSteps_ = 0;
  float maxLossScaling_ = 0.0f;  // some update finishes in the Apply phase (Lamb on shards)
  std::string graphFingerprint_;
  std::map<TensorId, HostTensor> stateInitializers_;  // by initializer name
  // The instances' communicator for checkpoints (a split of instances_, so an asynchronous save's
  // collectives never interleave with training's); null with one instance.
  std::shared_ptr<comm::Communicator> checkpointComm_;
  std::thread asyncSave_;
  // What the asynchronous save writes (owned by the session, used only by its thread until joined;
  // the next asynchronous save reuses the buffers).
  std::vector<checkpoint::Dataset> asyncDatasets_;
  std::exception_ptr asyncError_;
  // Inputs fed with ReplicatedStreamMode::Broadcast.
  std::set<TensorId> broadcastInputs_;
  ir::OptimizerGraph optimizerGraph_;
  ir::OptimizerTransformOptions optimizerOptions_;
  TensorId lossScalingSeed_;
  std::map<TensorId, TensorId> gradOfWeight_;
  std::string memoryReport_;
  bool prepared_ = false;
  int64_t localReplicas_ = 1;
  int64_t globalReplicas_ = 1;
  int64_t replicaOffset_ = 0;
  std::shared_ptr<comm::Communicator> instances_;
  std::unique_ptr<GradientReducer> reducer_;
  // Per Backward instruction: the reduced tensors complete after it (empty: no overlap).
  std::vector<std::vector<TensorId>> readyAfter_;
  std::vector<std::unique_ptr<LoweredGraph>> replicaPrograms_;  // replicas 1..L-1 (threads)
  std::unique_ptr<ReplicaPool> pool_;  // one thread per local replica when there are several
  // How the model's replicated collective ops meet the other replicas (set by prepareDevice).
  std::unique_ptr<ReplicaCollectives> collectives_;
  int64_t accumulationFactor_ = 1;
  uint64_t seed_ = 0;
  uint64_t executionCounter_ = 0;
  int64_t stepCount_ = 0;
  // Seconds spent in run() in total and in the cross-replica gradient reduction
  // (reduceAcrossReplicas).
  double runSeconds_ = 0;
  double reductionSeconds_ = 0;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
