#include "ir/optimizers/update_rules.hpp"

#include "common/check.hpp"

namespace xtrain::ir {
namespace {

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
      r.opType = "AdamUpdate";
      r.attrs.set("mode", std::string(toString(adam.getMode())));
      r.attrs.set("weightDecayMode", decayAttr(adam.getWeightDecayMode()));
      r.slots = {{"m", "Accl1", true, adam.getAccl1Type()},
                 {"v", "Accl2", true, adam.getAccl2Type()},
                 {"step", "Step", false, DataType::FLOAT}};
      r.accumType = adam.getAccumType();
      r.inputSlots = {3, 4, 5};
      r.lamb = adam.isLamb();
      return r;
    }
    case OptimizerType::Adaptive: {
      const auto& ad = static_cast<const Adaptive&>(optimizer);
      r.opType = "AdaptiveUpdate";
      r.attrs.set("mode", std::string(toString(ad.getMode())));
      r.attrs.set("weightDecayMode", decayAttr(ad.getWeightDecayMode()));
      r.accumType = ad.getAccumType();
      r.slots.push_back({"v1", "Accl1", true, ad.getAccl1Type()});
      r.inputSlots.push_back(3);
      if (ad.getMode() == AdaptiveMode::CenteredRMSProp || ad.getMode() == AdaptiveMode::AdaDelta) {
        r.slots.push_back({"v2", "Accl2", true, ad.getAccl2Type()});
        r.inputSlots.push_back(4);
      }
      if (ad.requiresMomentum()) {
        r.slots.push_back({"v3", "Accl3", true, ad.getAccl3Type()});
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
  // The family's modes (Adam's mode, the weight-decay mode) are in its description.
  if (describeOptimizer(current) != describeOptimizer(next)) {
    throw error(
        "updateOptimizerFromHost: the mode and weight-decay mode are fixed when the session is "
        "built: it has {}, the new optimizer is {}",
        describeOptimizer(current), describeOptimizer(next));
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
    case OptimizerType::Adam: break;
    case OptimizerType::Adaptive: {
      const auto& a = static_cast<const Adaptive&>(current);
      const auto& b = static_cast<const Adaptive&>(next);
      if (b.requiresMomentum() && !a.requiresMomentum()) throw error(noState, "Accl3");
      break;
    }
  }
  const UpdateRule a = updateRuleOf(current);
  const UpdateRule b = updateRuleOf(next);
  bool sameTypes = a.accumType == b.accumType && a.slots.size() == b.slots.size();
  for (size_t k = 0; sameTypes && k < a.slots.size(); ++k)
    sameTypes = a.slots[k].type == b.slots[k].type;
  if (!sameTypes) {
    throw error(
        "updateOptimizerFromHost: the accumulator and state types (accumType, accl1Type, ...) are "
        "fixed when the session is built");
  }
  if (current.getClipNormSettings() != next.getClipNormSettings()) {
    throw error("updateOptimizerFromHost: the clipping groups are fixed when the session is built");
  }
}

}  // namespace xtrain::ir
