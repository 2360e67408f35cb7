// The training graph: the loss checked, the backward pass (its loss scaling seed from the
// UpdateControl), the optimizer's updates (plain, grouped or sharded), and BatchNorm's running
// statistics.
#include "ir/autodiff/autodiff.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "ir/recompute/recompute.hpp"
#include "replication/sharding.hpp"
#include "session/session_impl.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

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
  ad.seed = updateControl_.addLossScaling(g);
  const std::map<TensorId, TensorId> gradOfWeight = ir::autodiff(g, config_.loss, weights, ad);
  if (gradOfWeight.empty()) {
    throw error(
        "no trainable weight reaches the loss '{}': it does not depend on any of the model's {} "
        "weights, so training would change nothing (is it the right tensor?)",
        config_.loss, weights.size());
  }
  for (const auto& w : weights) {
    if (!gradOfWeight.count(w)) {
      logging::session::warn("weight '{}' does not affect the loss '{}' and will not be trained", w,
                             config_.loss);
    }
  }
  addOptimizer(gradOfWeight);
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

void SessionImpl::addOptimizer(const std::map<TensorId, TensorId>& gradOfWeight) {
  ir::Graph& g = *graph_;
  const Optimizer& opt = *config_.optimizer;
  optimizerOptions_.accumulationFactor = accumulationFactor_;
  optimizerOptions_.globalReplicationFactor = config_.options.getGlobalReplicationFactor();
  optimizerOptions_.reduction = config_.options.accumulationAndReplicationReductionType;
  optimizerOptions_.strategy = config_.options.meanAccumulationAndReplicationReductionStrategy;
  optimizerOptions_.stochasticRounding = config_.options.enableStochasticRounding;
  for (const auto& [id, v] : hostState_.grouped()) {
    optimizerOptions_.replicasOfWeight[id] = v.grouping.getGroupSize();
  }
  std::vector<std::pair<TensorId, int64_t>> trained;
  for (const auto& [w, grad] : gradOfWeight) trained.emplace_back(w, g.tensor(w).info.nelms());
  hostState_.planSharding(config_.options, trained, layout_.global);
  for (const auto& [id, plan] : hostState_.shards()) {
    optimizerOptions_.shardElements[id] = plan.shard;
  }
  optimizerGraph_ = ir::applyOptimizer(g, opt, gradOfWeight, optimizerOptions_);
  hostState_.followUpdates(optimizerGraph_);
  updateControl_.setUpdates(g, optimizerGraph_, optimizerOptions_, hostState_.grouped(),
                            hostState_.shards());
}

}  // namespace xtrain::session
