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

#include <array>
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
#include "common/timeline_job.hpp"
#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "replication/grouped_variable.hpp"
#include "replication/replica_exchange.hpp"
#include "replication/sharding.hpp"
#include "session/checkpoint_coordinator.hpp"
#include "session/engine_options.hpp"
#include "session/host_state.hpp"
#include "session/lowered_graph.hpp"
#include "session/replica_collectives.hpp"
#include "session/replica_pool.hpp"
#include "session/session_config.hpp"
#include "session/session_profiler.hpp"
#include "session/update_control.hpp"
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

class StepBuffers;

// The replication layer (src/replication) sees the session as its local replicas: a buffer per
// (replica, tensor) and the replicas' threads.
class SessionImpl : private replication::LocalReplicas {
 public:
  explicit SessionImpl(SessionConfig config);
  ~SessionImpl();
  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

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
  // What the session measured, and its reports (getSummaryReport, getReport, ...).
  SessionProfiler& profiler() { return profiler_; }
  const SessionProfiler& profiler() const { return profiler_; }
  // The session as its reports describe it, now.
  SessionFigures figures() const;

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
  // Loss scaling, clipping, hyperparameter values.
  const UpdateControl& updateControl() const { return updateControl_; }

 private:
  void validateOptions() const;
  // A hash of the model's operations and weights (names, types, per-replica shapes): what a
  // checkpoint must have been written for.
  std::string computeGraphFingerprint() const;
  // Throws naming the first way a checkpoint's contents do not fit this session (a missing or
  // differently shaped tensor, another optimizer mode, another model, no random state).
  void checkCheckpointContents(const std::string& path, const checkpoint::Contents& c) const;
  // checkCheckpointContents for the coordinator.
  CheckpointCoordinator::Check checkCheckpoint() const;
  // Makes a checkpoint every instance agreed to load the session's state (weights, optimizer
  // state, loss scaling, random state, step) and returns what the caller learns of it.
  CheckpointInfo installCheckpoint(const std::string& path, checkpoint::Contents c);
  void checkLoss() const;
  void buildTrainingGraph();
  // buildTrainingGraph's part after the backward pass: the optimizer's updates, their kinds (plain,
  // grouped, sharded), and what the update control follows of them.
  void addOptimizer();
  // SessionOptions::autoRecomputation on the training graph (ir/recompute/recompute.hpp).
  void applyRecomputation();
  void requirePrepared(const char* what) const;
  // requirePrepared, and the device still attached (or, OnDemand, attached again): a call that
  // touches the replicas' buffers on a detached device throws runtime_error (session_attach.cpp).
  void requireAttached(const char* what);
  HostTensor& replicaBuffer(int64_t replica, const TensorId& id);
  // replication::LocalReplicas
  HostTensor& buffer(int64_t localReplica, const TensorId& id) override {
    return replicaBuffer(localReplica, id);
  }
  void forEach(const std::function<void(int64_t)>& fn) override;
  // FLOAT16 accumulators taken, then every gradient reduced across the replicas (exchange_).
  void reduceAcrossReplicas();
  // run()'s parts (session_step.cpp): the buffer indices of the step's inputs, anchors and
  // accumulation counter; one micro-batch on every replica (inputs in, Forward, Backward and
  // Accumulate, anchors out); after a batch's micro-batches, the reduction and the update.
  struct StepIndices {
    std::vector<int> inputs;
    std::vector<int> anchors;
    int accumulationIndex = -1;
  };
  StepIndices stepIndices(const StepBuffers& io) const;
  void runMicroBatch(StepBuffers& io, const StepIndices& indices, int64_t iteration,
                     int64_t microBatch);
  void update(int64_t batch);
  // The programs replica r runs (its own copy on the pool's threads), and fn(r) for every replica,
  // on their threads (on this one with a single replica).
  const LoweredGraph& programOf(int64_t replica) const;
  void forEachReplicaProgram(const std::function<void(int64_t)>& fn);
  // FLOAT16 gradient accumulators: each replica's accumulator converted into its FLOAT `reduced`
  // tensor and cleared, before the reduction.
  void takeHalfAccumulators();
  // The communicator of the instances (one rank per instance) when replication is distributed.
  void joinInstances();
  // What the exchange reduces: the updates' gradients by kind.
  replication::GradientPlan gradientPlan() const;

  SessionConfig config_;
  // SessionOptions::engineOptions and reportOptions, parsed (session/engine_options.hpp).
  EngineSettings engineSettings_;
  // engineOptions "trace.file": this session's timeline, written when the session is destroyed
  // (after everything declared below it has finished).
  std::unique_ptr<timeline::JobTrace> trace_;
  // The profile, the simulated clock, the memory model and the reports.
  SessionProfiler profiler_;
  std::unique_ptr<ir::Graph> graph_;
  std::string modelBytes_;
  std::map<std::string, std::string> modelMetadata_;
  std::unique_ptr<LoweredGraph> lowered_;
  std::vector<std::vector<HostTensor>> replicas_;
  // Host views, grouped and sharded bookkeeping, state initializers, checkpoint tensors.
  HostState hostState_;
  // The updates whose weights are neither grouped nor sharded (reduced over all replicas).
  std::vector<const ir::WeightUpdate*> plainUpdates_;
  // Loss scaling, clipping, hyperparameter values and Lamb's norms (reads config_).
  UpdateControl updateControl_{config_};
  std::string graphFingerprint_;
  // Saves and loads checkpoints with the other instances (over a split of instances_, so an
  // asynchronous save's collectives never interleave with training's).
  CheckpointCoordinator checkpoints_;
  // Inputs fed with ReplicatedStreamMode::Broadcast.
  std::set<TensorId> broadcastInputs_;
  ir::OptimizerGraph optimizerGraph_;
  ir::OptimizerTransformOptions optimizerOptions_;
  std::map<TensorId, TensorId> gradOfWeight_;
  bool prepared_ = false;
  int64_t localReplicas_ = 1;
  int64_t globalReplicas_ = 1;
  int64_t replicaOffset_ = 0;
  std::shared_ptr<comm::Communicator> instances_;
  std::unique_ptr<replication::ReplicaExchange> exchange_;
  // Per Backward instruction: the reduced tensors complete after it (empty: no overlap).
  std::vector<std::vector<TensorId>> readyAfter_;
  std::vector<std::unique_ptr<LoweredGraph>> replicaPrograms_;  // replicas 1..L-1 (threads)
  std::unique_ptr<ReplicaPool> pool_;  // one thread per local replica when there are several
  // The job's instances on this host, this one included (they share its cores).
  int64_t instancesOnHost_ = 1;
  // Kernel threads of a single local replica, which computes on the caller's thread during run():
  // 0 leaves the caller's setting (OpenMP's default: every core, or OMP_NUM_THREADS).
  int singleReplicaKernelThreads_ = 0;
  // How the model's replicated collective ops meet the other replicas (set by prepareDevice).
  std::unique_ptr<ReplicaCollectives> collectives_;
  int64_t accumulationFactor_ = 1;
  uint64_t seed_ = 0;
  uint64_t executionCounter_ = 0;
  int64_t stepCount_ = 0;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
