// The training graph: the loss checked, the backward pass, loss scaling's seed, the optimizer's
// updates (plain, grouped or sharded) and clip groups, and BatchNorm's running statistics.
#include <algorithm>
#include <limits>

#include "ir/autodiff/autodiff.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "ir/recompute/recompute.hpp"
#include "replication/sharding.hpp"
#include "session/session_impl.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

void SessionImpl::groupOptimizerState() {
  for (const auto& u : optimizerGraph_.updates) {
    auto it = grouped_.find(u.weight);
    if (it == grouped_.end()) continue;
    for (const auto& state : ir::stateWithAccumulator(u)) {
      // Adam's step count is a scalar, the same on every replica: it is not grouped.
      if (state.perElement) grouped_.emplace(state.id, it->second);
    }
  }
}

// The loss is checked before anything else names it (the DataFlow anchors it too), so a misspelt
// loss is reported as the loss. Training minimises one number: a loss of several elements (logits,
// a per-sample loss without reduction) would be trained on the sum of its elements, silently.
void SessionImpl::checkLoss() const {
  if (!graph_->hasTensor(config_.loss)) {
    throw error("the loss '{}' is not a tensor of the model", config_.loss);
  }
  const TensorInfo& info = graph_->tensor(config_.loss).info;
  if (info.nelms() != 1) {
    throw error(
        "the loss '{}' is {}, but a loss must be a scalar (one element): reduce it, e.g. with "
        "ReduceMean or a loss op's reduction \"mean\"",
        config_.loss, info.toString());
  }
  if (!isFloatingPoint(info.dataType())) {
    throw error("the loss '{}' is {}, but a loss must be FLOAT or FLOAT16", config_.loss,
                info.toString());
  }
}

namespace {

// BatchNormalization's running statistics (variable, the op's output that updates it): updated by
// a copy after the step, not by the optimizer.
std::vector<std::pair<TensorId, TensorId>> runningStatistics(const ir::Graph& g) {
  std::vector<std::pair<TensorId, TensorId>> stats;
  for (const auto& [opId, op] : g.ops()) {
    if (op->type != "BatchNormalization" || op->outputs.size() < 3) continue;
    for (size_t k : {size_t{1}, size_t{2}}) {
      const TensorId& var = op->inputs.at(k + 2);
      if (op->hasOutput(k) && g.tensor(var).kind == ir::TensorKind::Variable) {
        stats.emplace_back(var, op->outputs[k]);
      }
    }
  }
  return stats;
}

}  // namespace

void SessionImpl::buildTrainingGraph() {
  ir::Graph& g = *graph_;
  const auto statUpdates = runningStatistics(g);
  std::vector<TensorId> weights;
  for (const auto& id : g.tensorsOfKind(ir::TensorKind::Variable)) {
    bool isStat = false;
    for (const auto& [var, src] : statUpdates) isStat = isStat || var == id;
    if (!isStat) weights.push_back(id);
  }
  ir::AutodiffOptions ad;
  ad.seed = addLossScaling();
  gradOfWeight_ = ir::autodiff(g, config_.loss, weights, ad);
  if (gradOfWeight_.empty()) {
    throw error(
        "no trainable weight reaches the loss '{}': it does not depend on any of the model's {} "
        "weights, so training would change nothing (is it the right tensor?)",
        config_.loss, weights.size());
  }
  for (const auto& w : weights) {
    if (!gradOfWeight_.count(w)) {
      logging::session::warn("weight '{}' does not affect the loss '{}' and will not be trained", w,
                             config_.loss);
    }
  }
  addOptimizer();
  for (const auto& u : optimizerGraph_.updates) {
    if (g.tensor(u.weight).info.dataType() == DataType::FLOAT16) maxLossScaling_ = 32768.0f;
  }
  for (const auto& [var, src] : statUpdates) {
    ir::OpSpec copy;
    copy.type = "CopyVarUpdate";
    copy.domain = ir::kXtrainDomain;
    copy.inputs = {var, src};
    copy.numOutputs = 0;
    copy.phase = ir::Phase::Accumulate;
    copy.name = "running-stat/" + var;
    g.addOp(std::move(copy));
  }
}

// The anchors and the loss are read by the host: the ops that make them are not recomputed.
void SessionImpl::applyRecomputation() {
  const RecomputationType mode = config_.options.autoRecomputation;
  if (mode == RecomputationType::None) return;
  std::set<TensorId> keep(config_.dataFlow.anchors().begin(), config_.dataFlow.anchors().end());
  keep.insert(config_.loss);
  const ir::RecomputeReport r = ir::recompute(*graph_, mode, config_.loss, keep);
  logging::session::info(
      "autoRecomputation {}: {} forward ops chosen, {} recomputed in the backward pass",
      mode == RecomputationType::Standard       ? "Standard"
      : mode == RecomputationType::NormOnly     ? "NormOnly"
      : mode == RecomputationType::RecomputeAll ? "RecomputeAll"
                                                : "?",
      r.candidates, r.cloned);
}

TensorId SessionImpl::addLossScaling() {
  ir::Graph& g = *graph_;
  const Optimizer& opt = *config_.optimizer;
  const auto& als = config_.options.automaticLossScalingSettings;
  lossScaling_ = opt.getLossScalingVal();
  if (als.enabled) {
    if (opt.lossScaling().isConst()) {
      throw error(
          "automatic loss scaling changes the loss scaling factor, but the optimizer's lossScaling "
          "({}) is constant: create it with lossScaling {{{}, false}}",
          opt.getLossScalingVal(), opt.getLossScalingVal());
    }
    // growthFactor, backoffFactor and growthInterval are in range (checkOptionRanges).
    if (!als.toTrackTensors.empty() || als.updatePeriod != 1 || als.binEdgeLocation != 0.0625f ||
        als.thresholdUpperCountProportion != 1e-7f ||
        als.gradientTensorTrackingMethod !=
            GradientTensorTrackingMethod::AllNonViewChangingGradientTensors) {
      logging::session::warn(
          "automaticLossScalingSettings: PopART's histogram settings (toTrackTensors, "
          "binEdgeLocation, thresholdUpperCountProportion, updatePeriod, "
          "gradientTensorTrackingMethod) have no effect; xtrain scales dynamically "
          "(growthInterval, growthFactor, backoffFactor)");
    }
  }
  // With a FLOAT loss the scale is FLOAT already; a FLOAT scale for a FLOAT16 loss is not built.
  if (config_.options.ensureFp32LossScaleTensor &&
      g.tensor(config_.loss).info.dataType() != DataType::FLOAT) {
    throw error(
        "SessionOptions.ensureFp32LossScaleTensor = true is not supported yet (not implemented in "
        "xtrain) for the {} loss '{}': the loss scale has the loss's type",
        dataTypeName(g.tensor(config_.loss).info.dataType()), config_.loss);
  }
  if (g.tensor(config_.loss).info.dataType() == DataType::FLOAT16 && lossScaling_ > 65504.0f) {
    throw error(
        "the loss '{}' is FLOAT16, whose largest value is 65504, but the loss scaling is {}: the "
        "scaled loss gradient would be inf (use at most 32768)",
        config_.loss, lossScaling_);
  }
  if (als.enabled || !opt.lossScaling().isConst() || opt.getLossScalingVal() != 1.0f) {
    // The seed of the backward pass, in the loss's type (FLOAT16 for a FLOAT16 loss).
    HostTensor ls(g.tensor(config_.loss).info);
    ls.fill(lossScaling_);
    lossScalingSeed_ = g.uniqueId("lossScaling");
    g.addTensor(lossScalingSeed_, ls.info(), ir::TensorKind::OptimizerState,
                std::make_shared<HostTensor>(std::move(ls)));
  }
  maxLossScaling_ = g.tensor(config_.loss).info.dataType() == DataType::FLOAT16
                        ? 32768.0f
                        : std::numeric_limits<float>::max();
  return lossScalingSeed_;
}

void SessionImpl::addOptimizer() {
  ir::Graph& g = *graph_;
  const Optimizer& opt = *config_.optimizer;
  optimizerOptions_.accumulationFactor = accumulationFactor_;
  optimizerOptions_.globalReplicationFactor = config_.options.getGlobalReplicationFactor();
  optimizerOptions_.reduction = config_.options.accumulationAndReplicationReductionType;
  optimizerOptions_.strategy = config_.options.meanAccumulationAndReplicationReductionStrategy;
  optimizerOptions_.stochasticRounding = config_.options.enableStochasticRounding;
  for (const auto& [id, v] : grouped_) {
    optimizerOptions_.replicasOfWeight[id] = v.grouping.getGroupSize();
  }
  std::vector<std::pair<TensorId, int64_t>> trained;
  for (const auto& [w, grad] : gradOfWeight_) trained.emplace_back(w, g.tensor(w).info.nelms());
  shards_ = replication::planSharding(config_.options, trained, variableSettings_, globalReplicas_);
  for (const auto& [id, plan] : shards_) optimizerOptions_.shardElements[id] = plan.shard;
  optimizerGraph_ = ir::applyOptimizer(g, opt, gradOfWeight_, optimizerOptions_);
  groupOptimizerState();
  for (const auto& u : optimizerGraph_.updates) {
    for (const auto& state : u.state) {
      if (u.shardElements > 0 && state.perElement) shardedState_[state.id] = u.weight;
    }
    // Grouped weights reduce over their groups, sharded ones by a reduce-scatter; the rest here.
    if (!grouped_.count(u.weight) && !shards_.count(u.weight)) plainUpdates_.push_back(&u);
    hasApplyPhase_ = hasApplyPhase_ || !u.lambNorms.empty();
  }
  for (const auto& clip : opt.getClipNormSettings()) {
    ClipGroup group{clip.getMaxNorm(), {}};
    for (const auto& u : optimizerGraph_.updates) {
      const auto& ids = clip.getWeightIds();
      if (clip.getMode() == ClipNormSettings::Mode::ClipAllWeights ||
          std::find(ids.begin(), ids.end(), u.weight) != ids.end()) {
        group.updates.push_back(&u);
      }
    }
    clipGroups_.push_back(std::move(group));
  }
}

}  // namespace xtrain::session
