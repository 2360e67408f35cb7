// SessionImpl: what Session, TrainingSession and InferenceSession do. It keeps the configuration,
// the graph (imported, checked, made a training graph) and the order of things: what prepareDevice
// builds in which order, what run() does in a step, which checks come before each call, and the
// session's own state (the random seed, the steps run). The rest is four parts it owns:
//
//   SessionProfiler  what the session measures and reports (profile, cycles, memory, reports);
//   UpdateControl    loss scaling, gradient clipping, hyperparameter values, Lamb's norms;
//   HostState        the host views of weights and optimizer state, grouped and sharded
//                    bookkeeping, what a checkpoint holds of them;
//   ReplicaRuntime   the local replicas: buffer tables, programs, threads, the exchange and
//                    collectives with the other replicas and instances (from prepareDevice on).
//
// Replicas: L local replicas each own a buffer table built from one LoweredGraph and run on their
// own threads. Micro-batches go to all replicas at once; after each batch's micro-batches the
// gradients (or accumulators) are reduced hierarchically (across the local replicas, then, with
// distributed replicated graphs, across the instances through the comm layer), then every replica
// applies the same update.
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "common/timeline_job.hpp"
#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "replication/replica_layout.hpp"
#include "session/batch_serial.hpp"
#include "session/checkpoint_coordinator.hpp"
#include "session/engine_options.hpp"
#include "session/host_state.hpp"
#include "session/offchip_plan.hpp"
#include "session/pipeline_plan.hpp"
#include "session/random_state.hpp"
#include "session/replica_runtime.hpp"
#include "session/session_config.hpp"
#include "session/session_profiler.hpp"
#include "session/update_control.hpp"
#include "xtrain/checkpoint.hpp"
#include "xtrain/stepio.hpp"

namespace xtrain::session {

class StepBuffers;

class SessionImpl {
 public:
  explicit SessionImpl(SessionConfig config);
  ~SessionImpl();
  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

  void prepareDevice();
  // Session::loadEngineAndConnectStreams: marks the engine loaded (logged once).
  void loadEngine();
  void weightsFromHost();
  void weightsToHost();
  void broadcastWeights(int rootRank);
  void readWeights(const WeightsIO& weights);
  void writeWeights(const WeightsIO& weights);
  void run(IStepIO& stepio, const std::string& debugName);
  void modelToHost(const std::string& path, bool withOptimizerState);
  void resetHostWeights(const std::string& model, bool ignoreMissing);
  void updateExternallySavedTensorLocations(const std::string& from, const std::string& to);
  void updateOptimizerFromHost(const Optimizer& optimizer);
  // Checkpoints (session_checkpoint.cpp; TrainingSession's contract in xtrain/session.hpp).
  void saveCheckpoint(const std::string& path, const CheckpointOptions& options);
  CheckpointInfo loadCheckpoint(const std::string& path);
  std::optional<CheckpointInfo> loadLatestCheckpoint(const std::string& directory);
  void waitForCheckpoint();

  const SessionConfig& config() const { return config_; }
  const ir::OptimizerGraph& optimizerGraph() const { return optimizerGraph_; }
  const ir::Graph& graph() const { return *graph_; }
  // The pipeline's plan (not enabled when not pipelining).
  const PipelinePlan& pipeline() const { return pipeline_; }
  // The host buffers run() expects of an input and fills for an anchor (batches, micro-batches,
  // replicas).
  Shape inputBufferShape(const TensorId& id) const;
  Shape anchorBufferShape(const TensorId& id) const;

  // The random stream's seed and position (set/getRandomSeed, set/getRNGState).
  RandomState& random() { return random_; }
  // Session::setRandomSeed: refused before prepareDevice when the model draws random numbers, as
  // PopART refuses it (the seed goes to the device program at once).
  void setRandomSeed(uint64_t seed);
  // Steps run so far.
  int64_t stepCount() const { return stepCount_; }

  // What the session measured, and its reports (getSummaryReport, getReport, ...).
  SessionProfiler& profiler() { return profiler_; }
  // The session as its reports describe it, now.
  SessionFigures figures() const;
  // Loss scaling, clipping, hyperparameter values.
  const UpdateControl& updateControl() const { return updateControl_; }

 private:
  // Throws naming the first way a checkpoint's contents do not fit this session (a missing or
  // differently shaped tensor, another optimizer mode, another model, no random state).
  CheckpointCoordinator::Check checkCheckpoint() const;
  // Makes a checkpoint every instance agreed to load the session's state (weights, optimizer
  // state, loss scaling, random state, step) and returns what the caller learns of it.
  CheckpointInfo installCheckpoint(const std::string& path, checkpoint::Contents c);
  void requirePrepared(const char* what) const;
  // requirePrepared, and the device still attached (or, OnDemand, attached again): a call that
  // touches the replicas' buffers on a detached device throws runtime_error (session_attach.cpp).
  // Returns the replicas.
  ReplicaRuntime& requireAttached(const char* what);
  // run()'s parts (session_step.cpp): one micro-batch on every replica (inputs in, Forward,
  // Backward and Accumulate, anchors out); after a batch's micro-batches, the reduction and the
  // update.
  struct StepIndices {
    std::vector<int> inputs;
    std::vector<int> anchors;
    // When each anchor is read (PopART's fragments its host copies are in):
    // - MicroBatch: after each micro-batch's forward and backward;
    // - AfterUpdate: after each batch's update (a weight's or optimizer state's ALL, EVERYN and
    //   SUM anchors in training without gradient accumulation: PopART copies them in the backward
    //   fragment, which then holds the update);
    // - StepEnd: once, after the step's last update (a weight's or optimizer state's FINAL
    //   anchor in training: PopART's end-of-step copies).
    enum class AnchorPoint : uint8_t { MicroBatch, AfterUpdate, StepEnd };
    std::vector<AnchorPoint> readAt;
    int accumulationIndex = -1;
  };
  // Removes the model's Stream inputs that no op reads and that are neither anchored nor graph
  // outputs (into unusedInputs_).
  void removeUnusedInputs(const std::vector<TensorId>& gradientTargets);
  // pipeline_ for the complete graph (pipelineStages_ > 0).
  std::vector<TensorId> checkAnchorsExist() const;
  // The weight whose optimizer state or accumulator `id` names (Accl___<w>, ..., Accum___<w>), or
  // "". Such anchors are checked once the training graph exists (checkStateAnchors): they are read
  // like a weight's (StepIndices::AnchorPoint).
  static TensorId stateAnchorWeight(const TensorId& id);
  void checkStateAnchors() const;
  void planPipelineSchedule();
  void runMicroBatch(StepBuffers& io, const StepIndices& indices, int64_t iteration,
                     int64_t microBatch);
  // Pipelining: `count` micro-batches (iterations first..first+count-1) through the pipeline's
  // cycles (fill, steady state, flush), inputs in as each enters, anchors out as each leaves.
  // updateSeed: the stage threads update as their slots finish (updatesInPipeline).
  void runPipelined(StepBuffers& io, const StepIndices& indices, int64_t first, int64_t count,
                    std::optional<uint64_t> updateSeed = std::nullopt);
  // Whether a pipelined batch's update can run on the stage threads as each finishes its slots
  // (ReplicaRuntime::canUpdateInPipeline): nothing of the session's comes between the last
  // micro-batch and the update (one replica in the job, so no reduction; no clipping, loss
  // scaling or Apply phase), and no weight, optimizer state or accumulator is read per
  // micro-batch (the host reads the last micro-batch's after the pipeline, before the update).
  bool updatesInPipeline(const StepBuffers& io, const StepIndices& indices) const;
  // One iteration's inputs into every replica's buffers, and its anchors out of them.
  // Pipelined, each input is written before `cycle` for the micro-batch its first reading slot
  // runs in it, and each anchor read after it for the micro-batch its writing slot ran
  // (iteration = first + that micro-batch; none when out of [0, count)).
  void writeInputs(StepBuffers& io, const StepIndices& indices, int64_t iteration);
  void writePipelineInputs(StepBuffers& io, const StepIndices& indices, int64_t first,
                           int64_t count, int64_t cycle);
  void readAnchors(StepBuffers& io, const StepIndices& indices, int64_t iteration,
                   StepIndices::AnchorPoint point = StepIndices::AnchorPoint::MicroBatch);
  void readPipelineAnchors(StepBuffers& io, const StepIndices& indices, int64_t first,
                           int64_t count, int64_t cycle);
  void update(int64_t batch, bool updatedInPipeline = false);

  SessionConfig config_;
  // SessionOptions::engineOptions, parsed (session/engine_options.hpp).
  EngineSettings engineSettings_;
  // engineOptions "trace.file": this session's timeline, written when the session is destroyed
  // (after everything declared below it has finished).
  std::unique_ptr<timeline::JobTrace> trace_;
  // The profile, the simulated clock, the memory model and the reports.
  SessionProfiler profiler_;
  replication::ReplicaLayout layout_;
  int64_t accumulationFactor_ = 1;
  // SessionOptions::enablePipelining: the forward stages (0: not pipelined) and the plan of slots
  // and stashes (session/pipeline_plan.hpp), made once the session's graph is complete.
  int64_t pipelineStages_ = 0;
  PipelinePlan pipeline_;
  std::unique_ptr<ir::Graph> graph_;
  std::string modelBytes_;
  std::map<std::string, std::string> modelMetadata_;
  // Inputs fed with ReplicatedStreamMode::Broadcast.
  std::set<TensorId> broadcastInputs_;
  // Model inputs no op reads and nothing anchors, removed from the graph as PopART prunes them: a
  // run needs no buffer for them and ignores one that is given (with a warning).
  std::set<TensorId> unusedInputs_;
  std::string graphFingerprint_;
  // The optimizer's updates in the graph, and the options they were made with.
  ir::OptimizerGraph optimizerGraph_;
  ir::OptimizerTransformOptions optimizerOptions_;
  // Host views, grouped and sharded bookkeeping, state initializers, checkpoint tensors.
  HostState hostState_;
  // The weights, optimizer state and accumulators kept in streaming memory (planned once the
  // training graph exists).
  OffChipPlan offChip_;
  // batchSerializationSettings: what the memory and cycle models charge per slice (prepareDevice).
  BatchSerialPlan batchSerial_;
  // Loss scaling, clipping, hyperparameter values and Lamb's norms (reads config_).
  UpdateControl updateControl_{config_};
  // The local replicas; made by prepareDevice (kept whichever of its steps fails).
  std::unique_ptr<ReplicaRuntime> runtime_;
  // Saves and loads checkpoints with the other instances (over a split of the instances'
  // communicator, so an asynchronous save's collectives never interleave with training's).
  // Declared after the runtime: an asynchronous save is joined before the instances' communicator
  // goes.
  CheckpointCoordinator checkpoints_;
  bool prepared_ = false;
  bool engineLoaded_ = false;
  RandomState random_;
  int64_t stepCount_ = 0;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
