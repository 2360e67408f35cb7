// The training graph (training_graph.hpp): the model's fingerprint, the loss checked, the backward
// pass (its loss scaling seed from the UpdateControl), the optimizer's updates (plain, grouped or
// sharded), BatchNorm's running statistics and recomputation.
#include "session/training_graph.hpp"

#include "checkpoint/checkpoint.hpp"
#include "ir/autodiff/autodiff.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "ir/recompute/recompute.hpp"
#include "replication/sharding.hpp"
#include "session/pattern_checks.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/tensornames.hpp"

namespace xtrain::session {

// The loss is checked before anything else names it (the DataFlow anchors it too), so a misspelt
// loss is reported as the loss. Training minimises one number: a loss of several elements (logits,
// a per-sample loss without reduction) would be trained on the sum of its elements, silently.
void checkLoss(const ir::Graph& graph, const TensorId& loss) {
  if (!graph.hasTensor(loss)) {
    throw error("the loss '{}' is not a tensor of the model", loss);
  }
  const TensorInfo& info = graph.tensor(loss).info;
  if (info.nelms() != 1) {
    throw error(
        "the loss '{}' is {}: reduce it to one element, e.g. with ReduceMean or a loss op's "
        "reduction \"mean\"; a loss must be a scalar tensor",
        loss, info.toString());
  }
  // INT32 as PopART allows it: an integer graph (ReduceMedian of INT32 data, say) can still be
  // differentiated, its gradients INT32 too.
  if (!isFloatingPoint(info.dataType()) && info.dataType() != DataType::INT32) {
    throw error("the loss '{}' is {}, but a loss must be FLOAT, FLOAT16 or INT32", loss,
                info.toString());
  }
}

// A hash of the model's operations and weights (names, types, per-replica shapes): what a
// checkpoint must have been written for.
std::string graphFingerprint(const ir::Graph& graph) {
  checkpoint::Fnv1a64 f;
  for (const auto& [id, op] : graph.ops()) {
    f.add(op->domain + ":" + op->type);
    for (const auto& in : op->inputs) f.add("<" + in);
    for (const auto& out : op->outputs) f.add(">" + out);
  }
  for (const auto& id : graph.tensorsOfKind(ir::TensorKind::Variable)) {
    f.add(id + " " + graph.tensor(id).info.toString());
  }
  return checkpoint::graphFingerprint(f.value);
}

namespace {

// The variables the model writes itself (variable, the tensor that updates it):
// BatchNormalization's running statistics and ai.graphcore CopyVarUpdate's variable. Updated by a
// copy after each micro-batch's backward pass (in inference, its forward pass), not by the
// optimizer.
std::vector<std::pair<TensorId, TensorId>> runningStatistics(const ir::Graph& g,
                                                             bool withBatchNorm = true) {
  std::vector<std::pair<TensorId, TensorId>> stats;
  for (const auto& [opId, op] : g.ops()) {
    if (op->type == "CopyVarUpdate" && op->domain == ir::kGraphcoreDomain) {
      const TensorId& var = op->inputs.at(0);
      if (g.tensor(var).kind != ir::TensorKind::Variable) {
        throw error(
            "CopyVarUpdate '{}': input 0 '{}' is not a weight; copyvarupdate writes a variable of "
            "the model (an initialized input)",
            op->name, var);
      }
      stats.emplace_back(var, op->inputs.at(1));
      continue;
    }
    if (!withBatchNorm || op->type != "BatchNormalization" || op->outputs.size() < 3) continue;
    for (size_t k : {size_t{1}, size_t{2}}) {
      const TensorId& var = op->inputs.at(k + 2);
      if (op->hasOutput(k) && g.tensor(var).kind == ir::TensorKind::Variable) {
        stats.emplace_back(var, op->outputs[k]);
      }
    }
  }
  return stats;
}

// The copies that write the variables the model updates itself, after each micro-batch.
void addVariableCopies(ir::Graph& g, const std::vector<std::pair<TensorId, TensorId>>& updates) {
  for (const auto& [var, src] : updates) {
    ir::OpSpec copy;
    copy.type = "CopyVarUpdate";
    copy.domain = ir::kXtrainDomain;
    copy.inputs = {var, src};
    copy.numOutputs = 0;
    copy.phase = ir::Phase::Accumulate;
    copy.name = "variable-copy/" + var;
    g.addOp(std::move(copy));
  }
}

// The optimizer's updates of the trained weights (gradOfWeight), sharded as SessionOptions ask,
// grouped weights reduced over their groups.
TrainingGraph addOptimizer(ir::Graph& g, const SessionConfig& config, int64_t globalReplicas,
                           int64_t accumulationFactor,
                           const std::map<TensorId, TensorId>& gradOfWeight, HostState& host) {
  const Optimizer& opt = *config.optimizer;
  TrainingGraph training;
  ir::OptimizerTransformOptions& options = training.options;
  options.accumulationFactor = accumulationFactor;
  options.globalReplicationFactor = config.options.getGlobalReplicationFactor();
  options.reduction = config.options.accumulationAndReplicationReductionType;
  options.strategy = config.options.meanAccumulationAndReplicationReductionStrategy;
  options.stochasticRounding = config.options.enableStochasticRounding;
  for (const auto& [id, v] : host.grouped()) {
    options.replicasOfWeight[id] = v.grouping.getGroupSize();
  }
  std::vector<std::pair<TensorId, int64_t>> trained;
  for (const auto& [w, grad] : gradOfWeight) trained.emplace_back(w, g.tensor(w).info.nelms());
  host.planSharding(config.options, trained, globalReplicas);
  for (const auto& [id, plan] : host.shards()) {
    options.shardElements[id] = plan.shard;
  }
  training.updates = ir::applyOptimizer(g, opt, gradOfWeight, options);
  host.followUpdates(training.updates);
  return training;
}

}  // namespace

std::vector<TensorId> gradientAnchorTargets(const DataFlow& dataFlow) {
  const std::string prefix = reservedGradientPrefix();
  std::vector<TensorId> targets;
  for (const auto& id : dataFlow.anchors()) {
    if (id.rfind(prefix, 0) == 0) targets.push_back(id.substr(prefix.size()));
  }
  return targets;
}

namespace {

// Gradient___<t> for every anchored target t: a copy of d(loss)/dt as autodiff made it (per
// micro-batch and replica, before accumulation and reduction, scaled by the loss scaling, as
// PopART's), in the backward pass.
void addGradientAnchors(ir::Graph& g, const TensorId& loss, const std::vector<TensorId>& targets,
                        const std::map<TensorId, TensorId>& gradOf) {
  for (const auto& t : targets) {
    const auto it = gradOf.find(t);
    if (it == gradOf.end()) {
      // PopART's words first (its tests compare the start of the message), then why.
      throw error(
          "Anchor tensor `{}{}' not in Ir Tensors. '{}' has no gradient: it does not influence the "
          "loss '{}', or is not floating point",
          reservedGradientPrefix(), t, t, loss);
    }
    ir::OpSpec copy;
    copy.type = "Identity";
    copy.inputs = {it->second};
    copy.outputs = {reservedGradientPrefix() + t};
    copy.phase = ir::Phase::Backward;
    copy.name = "gradient-anchor/" + t;
    g.addOp(std::move(copy));
  }
}

}  // namespace

TrainingGraph buildTrainingGraph(ir::Graph& g, const SessionConfig& config,
                                 const replication::ReplicaLayout& layout,
                                 int64_t accumulationFactor, HostState& host,
                                 UpdateControl& updates) {
  const auto statUpdates = runningStatistics(g);
  std::vector<TensorId> weights;
  for (const auto& id : g.tensorsOfKind(ir::TensorKind::Variable)) {
    bool isStat = false;
    for (const auto& [var, src] : statUpdates) isStat = isStat || var == id;
    if (!isStat) weights.push_back(id);
  }
  ir::AutodiffOptions ad;
  ad.seed = updates.addLossScaling(g);
  ad.beforeGradient = [&config](const ir::Op& op, const std::vector<bool>& needsGrad) {
    checkGradientAgainstPatterns(op, needsGrad, config.patterns);
  };
  // The weights' gradients, those the DataFlow anchors (Gradient___<t>) and those automatic loss
  // scaling tracks by name; the contributions it chooses from.
  const std::vector<TensorId> anchored = gradientAnchorTargets(config.dataFlow);
  const std::vector<TensorId> tracked = updates.trackedTargets(g);
  std::vector<TensorId> wrt = weights;
  wrt.insert(wrt.end(), anchored.begin(), anchored.end());
  wrt.insert(wrt.end(), tracked.begin(), tracked.end());
  std::vector<ir::GradientContribution> contributions;
  if (updates.histogramMethod()) ad.contributions = &contributions;
  const std::map<TensorId, TensorId> gradOf = ir::autodiff(g, config.loss, wrt, ad);
  updates.trackGradients(g, contributions, gradOf, accumulationFactor);
  addGradientAnchors(g, config.loss, anchored, gradOf);
  std::map<TensorId, TensorId> gradOfWeight;
  for (const auto& w : weights) {
    if (auto it = gradOf.find(w); it != gradOf.end()) gradOfWeight.emplace(w, it->second);
  }
  // Without weights to train the session still runs the model in training mode (dropout, batch
  // statistics) and computes anchored gradients, as PopART's does (its operator tests train so);
  // the warning says what a wrong loss tensor would look like. xtrain's trainer refuses it.
  if (gradOfWeight.empty()) {
    logging::session::warn(
        "no trainable weight reaches the loss '{}': it does not depend on any of the model's {} "
        "weights, so training changes no weight (is it the right tensor?)",
        config.loss, weights.size());
  }
  for (const auto& w : weights) {
    if (!gradOfWeight.count(w)) {
      logging::session::warn("weight '{}' does not affect the loss '{}' and will not be trained", w,
                             config.loss);
    }
  }
  TrainingGraph training =
      addOptimizer(g, config, layout.global, accumulationFactor, gradOfWeight, host);
  addVariableCopies(g, statUpdates);
  return training;
}

size_t addInferenceVariableCopies(ir::Graph& g) {
  // BatchNormalization does not update its statistics in inference (PopART's rule); only the
  // model's own CopyVarUpdate ops write variables there.
  const auto updates = runningStatistics(g, false);
  addVariableCopies(g, updates);
  return updates.size();
}

// The anchors and the loss are read by the host: the ops that make them are not recomputed.
// With mode None, the ops the model marks Recompute are recomputed (ir/recompute.hpp).
void applyRecomputation(ir::Graph& graph, const SessionConfig& config) {
  const RecomputationType mode = config.options.autoRecomputation;
  std::set<TensorId> keep(config.dataFlow.anchors().begin(), config.dataFlow.anchors().end());
  keep.insert(config.loss);
  const ir::RecomputeReport r = ir::recompute(graph, mode, config.loss, keep);
  if (mode == RecomputationType::None && r.candidates == 0) return;
  logging::session::info(
      "autoRecomputation {}: {} forward ops chosen, {} recomputed in the backward pass",
      mode == RecomputationType::Standard       ? "Standard"
      : mode == RecomputationType::NormOnly     ? "NormOnly"
      : mode == RecomputationType::RecomputeAll ? "RecomputeAll"
      : mode == RecomputationType::Pipeline     ? "Pipeline"
                                                : "None (the model's Recompute marks)",
      r.candidates, r.cloned);
}

}  // namespace xtrain::session
