// UpdateControl (update_control.hpp): loss scaling's seed, the updates it follows, and the
// hyperparameter values it writes. The per-step decisions are in loss_scaling.cpp and
// update_norms.cpp.
#include "session/update_control.hpp"

#include <algorithm>
#include <limits>

#include "ir/optimizers/update_rules.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

TensorId UpdateControl::addLossScaling(ir::Graph& g) {
  const SessionConfig& config = *config_;
  const Optimizer& opt = *config.optimizer;
  const auto& als = config.options.automaticLossScalingSettings;
  lossScaling_ = opt.getLossScalingVal();
  optimizerLossScaling_ = lossScaling_;
  histogram_ = als.enabled && als.method == AutomaticLossScalingMethod::Histogram;
  const TensorInfo lossInfo = g.tensor(config.loss).info;
  halfLoss_ = lossInfo.dataType() == DataType::FLOAT16;
  if (histogram_) {
    addHistogramTensors(g, lossInfo);
  } else if (als.enabled && opt.lossScaling().isConst()) {
    // GradScaler (growthFactor, backoffFactor and growthInterval are in range: checkOptionRanges).
    throw error(
        "automatic loss scaling changes the loss scaling factor, but the optimizer's lossScaling "
        "({}) is constant: create it with lossScaling {{{}, false}}",
        opt.getLossScalingVal(), opt.getLossScalingVal());
  }
  // With a FLOAT loss the scale is FLOAT already; a FLOAT scale for a FLOAT16 loss is not built.
  if (config.options.ensureFp32LossScaleTensor && lossInfo.dataType() != DataType::FLOAT) {
    throw error(
        "SessionOptions.ensureFp32LossScaleTensor = true is not supported yet (not implemented in "
        "xtrain) for the {} loss '{}': the loss scale has the loss's type",
        dataTypeName(lossInfo.dataType()), config.loss);
  }
  if (halfLoss_ && lossScaling_ > 65504.0f) {
    throw error(
        "the loss '{}' is FLOAT16, whose largest value is 65504, but the loss scaling is {}: the "
        "scaled loss gradient would be inf (use at most 32768)",
        config.loss, lossScaling_);
  }
  if (als.enabled || !opt.lossScaling().isConst() || opt.getLossScalingVal() != 1.0f) {
    // The seed of the backward pass, in the loss's type (FLOAT16 for a FLOAT16 loss): PopART's
    // lossScaling_<type>, or with the histogram method finalLossScale in the loss's type.
    HostTensor ls(lossInfo);
    ls.fill(lossScaling_);
    const std::string type = dataTypeName(lossInfo.dataType());
    lossScalingSeed_ = g.uniqueId(histogram_ ? "finalLossScale_" + type : "lossScaling_" + type);
    g.addTensor(lossScalingSeed_, lossInfo, ir::TensorKind::OptimizerState,
                std::make_shared<HostTensor>(std::move(ls)));
  }
  maxLossScaling_ = halfLoss_ ? 32768.0f : std::numeric_limits<float>::max();
  return lossScalingSeed_;
}

void UpdateControl::setUpdates(ir::Graph& graph, const ir::OptimizerGraph& updates,
                               const ir::OptimizerTransformOptions& options,
                               const std::map<TensorId, replication::GroupedVariable>& grouped,
                               const std::map<TensorId, replication::ShardPlan>& shards) {
  graph_ = &graph;
  updates_ = &updates;
  options_ = &options;
  grouped_ = &grouped;
  shards_ = &shards;
  for (const auto& u : updates.updates) hasApplyPhase_ = hasApplyPhase_ || !u.lambNorms.empty();
  for (const auto& clip : config_->optimizer->getClipNormSettings()) {
    ClipGroup group{clip.getMaxNorm(), {}};
    for (const auto& u : updates.updates) {
      const auto& ids = clip.getWeightIds();
      if (clip.getMode() == ClipNormSettings::Mode::ClipAllWeights ||
          std::find(ids.begin(), ids.end(), u.weight) != ids.end()) {
        group.updates.push_back(&u);
      }
    }
    clipGroups_.push_back(std::move(group));
  }
  for (const auto& u : updates.updates) {
    if (graph.tensor(u.weight).info.dataType() == DataType::FLOAT16) maxLossScaling_ = 32768.0f;
  }
}

void UpdateControl::attach(replication::LocalReplicas& replicas,
                           replication::ReplicaExchange& exchange,
                           std::map<TensorId, HostTensor>& hostViews) {
  replicas_ = &replicas;
  exchange_ = &exchange;
  hostViews_ = &hostViews;
}

void UpdateControl::optimizerChanged(float previousLossScaling) {
  // With automatic loss scaling the scale is the session's: a new optimizer (a learning-rate
  // schedule, say) keeps it and its run of finite steps, unless it gives another lossScaling value.
  const Optimizer& next = *config_->optimizer;
  if (histogram_) {
    // PopART's: the factor is the session's state; the optimizer's value is replaced.
    optimizerLossScaling_ = next.getLossScalingVal();
    lossScaling_ = optimizerLossScaling_ * updateFactor_;
    writeHyperValues();
    return;
  }
  const bool restart = !config_->options.automaticLossScalingSettings.enabled ||
                       next.getLossScalingVal() != previousLossScaling;
  if (restart) {
    lossScaling_ = next.getLossScalingVal();
    goodSteps_ = 0;
  }
  writeHyperValues();
}

void UpdateControl::writeHyperValues() {
  if (updates_ == nullptr) return;  // an inference session
  const Optimizer& opt = *config_->optimizer;
  for (const auto& u : updates_->updates) {
    const auto hv = ir::hyperValues(opt, u.weight, *options_, lossScaling_);
    writeEverywhere(u.hyper, HostTensor::fromVector<float>({static_cast<int64_t>(hv.size())}, hv));
  }
  if (!lossScalingSeed_.empty()) {
    HostTensor ls(graph_->tensor(lossScalingSeed_).info);
    ls.fill(lossScaling_);
    writeEverywhere(lossScalingSeed_, ls);
  }
  if (histogram_) writeHistogramTensors();
}

void UpdateControl::writeEverywhere(const TensorId& id, const HostTensor& value) {
  if (replicas_ != nullptr) {
    hostViews_->at(id) = value;
    for (int64_t r = 0; r < localReplicas(); ++r) buffer(r, id) = value;
  }
  graph_->tensor(id).value = std::make_shared<HostTensor>(value);
}

void UpdateControl::saveState(std::map<std::string, double>& hyperparameters) const {
  hyperparameters["lossScaling"] = lossScaling_;
  const auto& als = config_->options.automaticLossScalingSettings;
  if (histogram_) {
    hyperparameters["lossScaleUpdateFactor"] = updateFactor_;
    hyperparameters["lossScalingHistogramCounter"] = static_cast<double>(histogramCounter_);
    hyperparameters["lossScalingUpdateCounter"] = static_cast<double>(updateCounter_);
  } else if (als.enabled) {
    hyperparameters["lossScalingGoodSteps"] = static_cast<double>(goodSteps_);
    hyperparameters["lossScalingSkippedSteps"] = static_cast<double>(skippedSteps_);
  }
}

void UpdateControl::restoreState(const std::map<std::string, double>& hyperparameters) {
  if (!config_->options.automaticLossScalingSettings.enabled) return;
  auto value = [&](const char* key, double fallback) {
    auto it = hyperparameters.find(key);
    return it == hyperparameters.end() ? fallback : it->second;
  };
  if (histogram_) {
    updateFactor_ = static_cast<float>(value("lossScaleUpdateFactor", 1.0));
    histogramCounter_ = static_cast<int64_t>(value("lossScalingHistogramCounter", -1));
    updateCounter_ = static_cast<int64_t>(value("lossScalingUpdateCounter", -1));
    lossScaling_ = optimizerLossScaling_ * updateFactor_;
  } else {
    lossScaling_ = static_cast<float>(value("lossScaling", lossScaling_));
    goodSteps_ = static_cast<int64_t>(value("lossScalingGoodSteps", 0));
    skippedSteps_ = static_cast<int64_t>(value("lossScalingSkippedSteps", 0));
  }
  writeHyperValues();
}

}  // namespace xtrain::session
