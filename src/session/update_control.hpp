// UpdateControl: what decides and shapes a training session's update after the gradients are
// reduced (docs/optimizers.md sections 3.1, 5 and 6): the loss scaling factor (automatic loss
// scaling skips a step whose gradients are not all finite and backs the scale off, and grows it
// after a run of finite steps), gradient clipping's global norms, the hyperparameter values each
// weight's update reads, and Lamb's norms of sharded weights.
//
// Contract: built with the training graph (addLossScaling, then setUpdates), attached to the
// replicas at prepareDevice. Before attach the hyperparameter values go into the graph only (they
// become the replicas' initial values); after it, also into the host views and every local
// replica's buffers. The decisions that involve the other replicas or instances (finite
// gradients, norms over shards) go through the exchange, so every instance decides alike. Runs on
// the session's thread, between the replicas' program runs.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/autodiff/autodiff.hpp"
#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "replication/grouped_variable.hpp"
#include "replication/replica_exchange.hpp"
#include "replication/sharding.hpp"
#include "session/session_config.hpp"

namespace xtrain::session {

class UpdateControl {
 public:
  // `config` (its optimizer and automatic loss scaling settings) must outlive the control; the
  // session replaces config.optimizer before calling optimizerChanged.
  explicit UpdateControl(const SessionConfig& config) : config_(&config) {}

  // Building the training graph: loss scaling's checks and the backward pass's seed tensor (the
  // returned id; empty: none), in the loss's type.
  TensorId addLossScaling(ir::Graph& graph);
  // The optimizer's updates (kept by the caller, as are the maps): their clip groups, whether
  // some finish in the Apply phase, and the scale's ceiling (2^15 with a FLOAT16 weight). grouped
  // and shards are the grouped and sharded weights (by weight).
  void setUpdates(ir::Graph& graph, const ir::OptimizerGraph& updates,
                  const ir::OptimizerTransformOptions& options,
                  const std::map<TensorId, replication::GroupedVariable>& grouped,
                  const std::map<TensorId, replication::ShardPlan>& shards);
  // prepareDevice: the replicas' buffers, the exchange and the host views (by id) the values go to
  // from now on; all must outlive the control.
  void attach(replication::LocalReplicas& replicas, replication::ReplicaExchange& exchange,
              std::map<TensorId, HostTensor>& hostViews);

  // Automatic loss scaling, PopART's histogram method (histogram_loss_scaling.cpp).
  bool histogramMethod() const { return histogram_; }
  // Before autodiff: the forward tensors whose gradients are tracked by name (toTrackTensors with
  // GradientsOfUserSpecifiedTensors), so that autodiff computes them; PopART's errors for
  // inconsistent settings or unknown names.
  std::vector<TensorId> trackedTargets(const ir::Graph& graph) const;
  // After autodiff: chooses the gradients whose histograms are counted (PopART's rules of
  // gradientTensorTrackingMethod on the contributions autodiff made; or the gradients of the
  // named targets), and adds the statistics accumulator with gradient accumulation. Throws
  // PopART's error when no FLOAT16 gradient is tracked.
  void trackGradients(ir::Graph& graph, const std::vector<ir::GradientContribution>& contributions,
                      const std::map<TensorId, TensorId>& gradOf, int64_t accumulationFactor);
  // The tracked gradients: the host reads them after each micro-batch (they keep own buffers).
  const std::vector<TensorId>& trackedGradients() const { return tracked_; }
  // After each micro-batch: every local replica's counts of |g| below and at or above the bin
  // edge, added to its statistics (and to Accum___autoLossScaleStats with accumulation).
  void countGradients();
  // Pipelined runs, where each tracked gradient of a micro-batch is ready after its own cycle:
  // nextHistogramActive() advances the micro-batch counter (call it once per micro-batch, in
  // order) and says whether that micro-batch's histograms count (updatePeriod); countGradientsOf
  // adds the counts of `ids` (zero counts when !active).
  bool nextHistogramActive();
  void countGradientsOf(const std::vector<TensorId>& ids, bool active);
  // After each step's update: every updatePeriod steps, the statistics summed over the replicas
  // halve or double lossScaleUpdateFactor; the statistics restart.
  void updateLossScale();

  // Automatic loss scaling, xtrain's GradScaler method: whether every reduced gradient element
  // (every replica, shard and instance) is finite; skipping step `step`'s update (accumulators
  // cleared, the scale backed off); counting a finite step (the scale grows after growthInterval
  // of them).
  bool gradientsAreFinite();
  void skipUpdate(int64_t step);
  void countFiniteStep();
  // Gradient clipping: for each clip group, the global norm of its weights' reduced, unscaled
  // gradients (summed over shards for sharded weights), and the factor maxNorm / max(maxNorm,
  // norm) written into each weight's hyper tensor on every local replica.
  void clipGradients();
  // Lamb on shards: sums each sharded Lamb weight's partial norms over its shard group and writes
  // the totals into every local replica's lambNorms, for the Apply phase.
  void completeLambNorms();
  bool hasApplyPhase() const { return hasApplyPhase_; }
  // Whether this class acts between a batch's last micro-batch and its update: gradient clipping,
  // automatic loss scaling (a finiteness check, or the histograms the host counts) or an Apply
  // phase after it.
  bool actsAroundUpdate() const {
    return !clipGroups_.empty() || hasApplyPhase_ ||
           config_->options.automaticLossScalingSettings.enabled;
  }

  // config.optimizer was replaced (updateOptimizerFromHost): with automatic loss scaling the
  // scale stays the session's unless `previousLossScaling` differs from the new optimizer's; the
  // hyperparameter values are written again.
  void optimizerChanged(float previousLossScaling);

  // Checkpoints: the factor in force and, with automatic loss scaling, where its rule stands (so
  // a resumed job scales exactly as an uninterrupted one), as hyperparameters; restored from them
  // (with automatic loss scaling only).
  void saveState(std::map<std::string, double>& hyperparameters) const;
  void restoreState(const std::map<std::string, double>& hyperparameters);

  // The loss scale in force (with the histogram method, the optimizer's times the factor: what
  // finalLossScale holds).
  float lossScaling() const { return lossScaling_; }
  int64_t skippedSteps() const { return skippedSteps_; }
  // Per clip group: the global norm the latest clipping computed (first local replica).
  const std::vector<float>& clipNorms() const { return clipNorms_; }

 private:
  // Every weight's hyper tensor and the loss scaling seed from the optimizer and lossScaling_.
  void writeHyperValues();
  // `value` as tensor `id`'s value in the graph and, once attached, its host view and every local
  // replica's buffer.
  void writeEverywhere(const TensorId& id, const HostTensor& value);
  HostTensor& buffer(int64_t replica, const TensorId& id) { return replicas_->buffer(replica, id); }
  int64_t localReplicas() const { return exchange_->layout().local; }

  const SessionConfig* config_;
  // The optimizer's clip groups, resolved to the updates of their weights.
  struct ClipGroup {
    float maxNorm = 0;
    std::vector<const ir::WeightUpdate*> updates;
  };
  std::vector<ClipGroup> clipGroups_;
  std::vector<float> clipNorms_;
  // Set by setUpdates.
  ir::Graph* graph_ = nullptr;
  const ir::OptimizerGraph* updates_ = nullptr;
  const ir::OptimizerTransformOptions* options_ = nullptr;
  const std::map<TensorId, replication::GroupedVariable>* grouped_ = nullptr;
  const std::map<TensorId, replication::ShardPlan>* shards_ = nullptr;
  // Some update finishes in the Apply phase (Lamb on shards).
  bool hasApplyPhase_ = false;
  // Set by attach.
  replication::LocalReplicas* replicas_ = nullptr;
  replication::ReplicaExchange* exchange_ = nullptr;
  std::map<TensorId, HostTensor>* hostViews_ = nullptr;
  // The loss scaling factor in force (automatic loss scaling changes it), the finite steps in a row
  // since it last changed, the updates skipped, and its ceiling (2^15 with FLOAT16).
  float lossScaling_ = 1.0f;
  int64_t goodSteps_ = 0;
  int64_t skippedSteps_ = 0;
  float maxLossScaling_ = 0.0f;
  TensorId lossScalingSeed_;
  // The histogram method: on; the factor (lossScaleUpdateFactor) and the optimizer's lossScaling;
  // PopART's counters of the histograms (micro-batches, modulo af x updatePeriod) and of the
  // updates (steps, modulo updatePeriod), both from -1; the tracked gradients, the bin edge
  // (FLOAT16), each local replica's statistics {lower, upper}; the statistics accumulator (with
  // gradient accumulation, else empty); whether the loss is FLOAT16 (finalLossScale <= 2^15).
  bool histogram_ = false;
  float updateFactor_ = 1.0f;
  float optimizerLossScaling_ = 1.0f;
  int64_t histogramCounter_ = -1;
  int64_t updateCounter_ = -1;
  int64_t accumulationFactor_ = 1;
  std::vector<TensorId> tracked_;
  float binEdge_ = 0.0f;
  std::vector<float> statistics_;
  TensorId statisticsAccumulator_;
  bool halfLoss_ = false;
  // The histogram method's tensors: the scale in force, the factor, the optimizer's value.
  void addHistogramTensors(ir::Graph& graph, const TensorInfo& lossInfo);
  void writeHistogramTensors();
};

// Whether `id` names a tensor automatic loss scaling adds for these options (finalLossScale,
// lossScaleUpdateFactor, Accum___autoLossScaleStats, lossScaling_<type>): anchors may name it
// before the training graph exists.
bool isLossScalingTensor(const SessionOptions& options, const TensorId& id);
// PopART's error for automatic loss scaling in an inference session.
void checkLossScalingInInference(const SessionOptions& options);

}  // namespace xtrain::session

#pragma GCC visibility pop
