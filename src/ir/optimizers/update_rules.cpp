#include "ir/optimizers/update_rules.hpp"

#include "common/check.hpp"

namespace xtrain::ir {
namespace {

void requireFloatState(DataType t, const char* argument, const std::string& optimizer) {
  if (t == DataType::FLOAT16) {
    throw error("{}: {} FLOAT16 is not supported yet (optimizer state is FLOAT)", optimizer,
                argument);
  }
}

std::string decayAttr(WeightDecayMode mode) {
  return mode == WeightDecayMode::Decay ? "decay" : "l2";
}

}  // namespace

UpdateRule updateRuleOf(const Optimizer& optimizer) {
  UpdateRule r;
  switch (optimizer.type()) {
    case OptimizerType::SGD: {
      const auto& sgd = static_cast<const SGD&>(optimizer);
      r.opType = "SGDUpdate";
      r.attrs.set("nesterov", int64_t{sgd.nesterov() ? 1 : 0});
      if (sgd.requiresVelocity()) {
        r.slots.push_back({"velocity", "Accl", true});
        r.inputSlots.push_back(3);
      }
      return r;
    }
    case OptimizerType::Adam: {
      const auto& adam = static_cast<const Adam&>(optimizer);
      requireFloatState(adam.getAccumType(), "accumType", "Adam");
      requireFloatState(adam.getAccl1Type(), "accl1Type", "Adam");
      requireFloatState(adam.getAccl2Type(), "accl2Type", "Adam");
      r.opType = "AdamUpdate";
      r.attrs.set("mode", std::string(toString(adam.getMode())));
      r.attrs.set("weightDecayMode", decayAttr(adam.getWeightDecayMode()));
      r.slots = {{"m", "Accl1", true}, {"v", "Accl2", true}, {"step", "Step", false}};
      r.inputSlots = {3, 4, 5};
      r.lamb = adam.isLamb();
      return r;
    }
    case OptimizerType::Adaptive: {
      const auto& ad = static_cast<const Adaptive&>(optimizer);
      requireFloatState(ad.getAccumType(), "accumType", "Adaptive");
      requireFloatState(ad.getAccl1Type(), "accl1Type", "Adaptive");
      requireFloatState(ad.getAccl2Type(), "accl2Type", "Adaptive");
      requireFloatState(ad.getAccl3Type(), "accl3Type", "Adaptive");
      r.opType = "AdaptiveUpdate";
      r.attrs.set("mode", std::string(toString(ad.getMode())));
      r.attrs.set("weightDecayMode", decayAttr(ad.getWeightDecayMode()));
      r.slots.push_back({"v1", "Accl1", true});
      r.inputSlots.push_back(3);
      if (ad.getMode() == AdaptiveMode::CenteredRMSProp || ad.getMode() == AdaptiveMode::AdaDelta) {
        r.slots.push_back({"v2", "Accl2", true});
        r.inputSlots.push_back(4);
      }
      if (ad.requiresMomentum()) {
        r.slots.push_back({"v3", "Accl3", true});
        r.inputSlots.push_back(5);
      }
      return r;
    }
  }
  throw error("optimizer {} is not supported", optimizer.type_s());
}

std::vector<float> ruleValues(const Optimizer& optimizer, const TensorId& weight) {
  const OptimizerValues v = optimizer.valuesOf(weight);
  std::vector<float> out;
  for (const auto& key : optimizer.specificKeys()) out.push_back(v.at(key).val());
  return out;
}

std::string describeOptimizer(const Optimizer& optimizer) {
  switch (optimizer.type()) {
    case OptimizerType::SGD: return "SGD";
    case OptimizerType::Adam: {
      const auto& a = static_cast<const Adam&>(optimizer);
      return format("Adam({}, {})", toString(a.getMode()), toString(a.getWeightDecayMode()));
    }
    case OptimizerType::Adaptive: {
      const auto& a = static_cast<const Adaptive&>(optimizer);
      return format("Adaptive({}, {})", toString(a.getMode()), toString(a.getWeightDecayMode()));
    }
  }
  return optimizer.type_s();
}

void checkRuleReplacement(const Optimizer& current, const Optimizer& next) {
  if (current.type() != next.type()) {
    throw error("updateOptimizerFromHost: the session was built with {}, cannot switch to {}",
                current.type_s(), next.type_s());
  }
  const char* noState =
      "updateOptimizerFromHost: the new optimizer needs momentum but the session was built "
      "without {} tensors (make momentum non-constant or non-zero when creating the session)";
  switch (current.type()) {
    case OptimizerType::SGD: {
      const auto& a = static_cast<const SGD&>(current);
      const auto& b = static_cast<const SGD&>(next);
      if (a.nesterov() != b.nesterov()) {
        throw error("updateOptimizerFromHost: nesterov is fixed when the session is built");
      }
      if (b.requiresVelocity() && !a.requiresVelocity()) throw error(noState, "velocity");
      break;
    }
    case OptimizerType::Adam: {
      const auto& a = static_cast<const Adam&>(current);
      const auto& b = static_cast<const Adam&>(next);
      if (a.getMode() != b.getMode() || a.getWeightDecayMode() != b.getWeightDecayMode()) {
        throw error(
            "updateOptimizerFromHost: the Adam mode and weight-decay mode are fixed when the "
            "session "
            "is built ({}, {}); the new optimizer has {}, {}",
            toString(a.getMode()), toString(a.getWeightDecayMode()), toString(b.getMode()),
            toString(b.getWeightDecayMode()));
      }
      break;
    }
    case OptimizerType::Adaptive: {
      const auto& a = static_cast<const Adaptive&>(current);
      const auto& b = static_cast<const Adaptive&>(next);
      if (a.getMode() != b.getMode() || a.getWeightDecayMode() != b.getWeightDecayMode()) {
        throw error(
            "updateOptimizerFromHost: the Adaptive mode and weight-decay mode are fixed when the "
            "session is built ({}, {}); the new optimizer has {}, {}",
            toString(a.getMode()), toString(a.getWeightDecayMode()), toString(b.getMode()),
            toString(b.getWeightDecayMode()));
      }
      if (b.requiresMomentum() && !a.requiresMomentum()) throw error(noState, "Accl3");
      break;
    }
  }
  if (current.getClipNormSettings() != next.getClipNormSettings()) {
    throw error("updateOptimizerFromHost: the clipping groups are fixed when the session is built");
  }
}

}  // namespace xtrain::ir
