// Automatic loss scaling (docs/optimizers.md section 6.2): skip the update of a step whose
// gradients are not all finite and back the scale off; grow it after a run of finite steps.
#include <algorithm>
#include <cmath>
#include <limits>

#include "session/update_control.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {
namespace {

bool allFinite(const HostTensor& t) {
  for (float x : t.span<float>()) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

}  // namespace

bool UpdateControl::gradientsAreFinite() {
  bool finite = true;
  for (const auto& u : updates_->updates) {
    if (u.shardElements > 0 || grouped_->count(u.weight)) {
      // Each replica holds its own shard, or its group's gradient.
      const TensorId& id = u.shardElements > 0 ? u.gradShard : u.reduced;
      for (int64_t r = 0; r < localReplicas() && finite; ++r) finite = allFinite(buffer(r, id));
    } else {
      finite = allFinite(buffer(0, u.reduced));  // the same on every replica
    }
    if (!finite) break;
  }
  // Every instance takes the same decision.
  return exchange_->trueOnAllInstances(finite, "lossScalingFinite");
}

void UpdateControl::skipUpdate(int64_t step) {
  for (const auto& u : updates_->updates) {
    if (u.accumulator.empty()) continue;
    for (int64_t r = 0; r < localReplicas(); ++r) buffer(r, u.accumulator).fillZero();
  }
  const float before = lossScaling_;
  lossScaling_ =
      std::max(lossScaling_ * config_->options.automaticLossScalingSettings.backoffFactor,
               std::numeric_limits<float>::min());
  goodSteps_ = 0;
  ++skippedSteps_;
  logging::session::info(
      "step {}: a gradient is inf or nan; the update is skipped and the loss scaling goes from {} "
      "to {}",
      step, before, lossScaling_);
  writeHyperValues();
}

void UpdateControl::countFiniteStep() {
  const auto& als = config_->options.automaticLossScalingSettings;
  if (++goodSteps_ < als.growthInterval) return;
  goodSteps_ = 0;
  const float grown = std::min(lossScaling_ * als.growthFactor, maxLossScaling_);
  if (grown == lossScaling_) return;
  logging::session::debug("loss scaling grows from {} to {} after {} finite steps", lossScaling_,
                          grown, als.growthInterval);
  lossScaling_ = grown;
  writeHyperValues();
}

}  // namespace xtrain::session
