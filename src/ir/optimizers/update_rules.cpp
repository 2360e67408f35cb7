#include "ir/optimizers/update_rules.hpp"

#include "common/check.hpp"
#include "common/optimizer_hyper.hpp"

namespace xtrain::ir {
namespace {

std::string decayAttr(WeightDecayMode mode) {
  return mode == WeightDecayMode::Decay ? "decay" : "l2";
}

// A family's hyper tensor with the entries every family shares: the gradient scale, and a clipping
// factor of 1 (the session's clipping sets it each step).
template <class Slot>
HyperValues<Slot> withCommonEntries(float gradScale) {
  HyperValues<Slot> h;
  h.set(Slot::GradScale, gradScale);
  h.set(Slot::ClipFactor, 1.0f);
  return h;
}

}  // namespace

UpdateRule updateRuleOf(const Optimizer& optimizer) {
  UpdateRule r;
  switch (optimizer.type()) {
    case OptimizerType::SGD: {
      const auto& sgd = static_cast<const SGD&>(optimizer);
      r.opType = "SGDUpdate";
      // PopART's layouts (sgd.cpp): without velocity the accumulator has accumType; Combined
      // keeps everything in the weight's type (its one Accl___ tensor); Separate has accumType and
      // the velocity Accl1___ of accl1Type.
      const bool separate = sgd.getSGDAccumulatorAndMomentum() == SGDAccumulatorAndMomentum::Separate;
      if (!sgd.requiresVelocity() || separate) r.accumType = sgd.getSGDAccumType();
      if (sgd.requiresVelocity()) {
        if (separate) {
          r.slots.push_back({"velocity", "Accl1", true, sgd.getSGD2Accl1Type()});
        } else {
          r.slots.push_back({"velocity", "Accl", true});
        }
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
      // TensorFlow's RMSProp starts its mean square at 1 (PopART's rmspropTFVariant).
      r.slots.push_back(
          {"v1", "Accl1", true, ad.getAccl1Type(), ad.getRmspropTFVariant() ? 1.0f : 0.0f});
      if (ad.getRmspropTFVariant()) r.attrs.set("tfVariant", int64_t{1});
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

Attributes updateAttrsOf(const Optimizer& optimizer, const UpdateRule& rule,
                         const TensorId& weight) {
  Attributes attrs = rule.attrs;
  if (optimizer.type() == OptimizerType::SGD) {
    // PopART builds each weight's update with or without Nesterov from its own value. With a
    // momentum of 0 the kernel's Nesterov step equals the plain one (dampening is then 0).
    const SGD::Values v = static_cast<const SGD&>(optimizer).valuesFor(weight);
    attrs.set("nesterov", int64_t{v.nesterov.val() != 0.0f ? 1 : 0});
  }
  return attrs;
}

std::vector<float> hyperTensorOf(const Optimizer& optimizer, const TensorId& weight,
                                 float gradScale) {
  switch (optimizer.type()) {
    case OptimizerType::SGD: {
      const SGD::Values v = static_cast<const SGD&>(optimizer).valuesFor(weight);
      HyperValues<SgdHyper> h = withCommonEntries<SgdHyper>(gradScale);
      h.set(SgdHyper::LearningRate, v.learningRate.val());
      h.set(SgdHyper::WeightDecay, v.weightDecay.val());
      h.set(SgdHyper::Momentum, v.momentum.val());
      h.set(SgdHyper::Dampening, v.dampening.val());
      h.set(SgdHyper::VelocityScaling, v.velocityScaling.val());
      return h.values();
    }
    case OptimizerType::Adam: {
      const OptimizerValues v = optimizer.valuesOf(weight);
      HyperValues<AdamHyper> h = withCommonEntries<AdamHyper>(gradScale);
      h.set(AdamHyper::LearningRate, v.at("learningRate").val());
      h.set(AdamHyper::WeightDecay, v.at("weightDecay").val());
      h.set(AdamHyper::Beta1, v.at("beta1").val());
      h.set(AdamHyper::Beta2, v.at("beta2").val());
      h.set(AdamHyper::Eps, v.at("eps").val());
      h.set(AdamHyper::MaxWeightNorm, v.at("maxWeightNorm").val());
      return h.values();
    }
    case OptimizerType::Adaptive: {
      const OptimizerValues v = optimizer.valuesOf(weight);
      HyperValues<AdaptiveHyper> h = withCommonEntries<AdaptiveHyper>(gradScale);
      h.set(AdaptiveHyper::LearningRate, v.at("learningRate").val());
      h.set(AdaptiveHyper::WeightDecay, v.at("weightDecay").val());
      h.set(AdaptiveHyper::Alpha, v.at("alpha").val());
      h.set(AdaptiveHyper::Momentum, v.at("momentum").val());
      h.set(AdaptiveHyper::Eps, v.at("eps").val());
      return h.values();
    }
  }
  throw error("optimizer {} is not supported", optimizer.type_s());
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
      // The TF variant's state starts and is used differently: it is part of the mode.
      return format("Adaptive({}{}, {})", toString(a.getMode()),
                    a.getRmspropTFVariant() ? " TF variant" : "", toString(a.getWeightDecayMode()));
    }
  }
  return optimizer.type_s();
}

void checkRuleReplacement(const Optimizer& current, const Optimizer& next,
                          const std::vector<TensorId>& weights) {
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
      // Whether a weight's update is Nesterov's is fixed, even for a non-constant value.
      for (const auto& w : weights) {
        const bool was = a.valuesFor(w).nesterov.val() != 0.0f;
        if (was != (b.valuesFor(w).nesterov.val() != 0.0f)) {
          throw error(
              "updateOptimizerFromHost: nesterov of weight '{}' is fixed when the session is "
              "built (it is {})",
              w, was ? "on" : "off");
        }
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
  for (size_t k = 0; k < a.slots.size() && k < b.slots.size(); ++k) {
    if (a.slots[k].prefix != b.slots[k].prefix) {
      throw error(
          "updateOptimizerFromHost: the state layout is fixed when the session is built (the "
          "session keeps {}___<weight>, the new optimizer {}___<weight>: "
          "SGDAccumulatorAndMomentum differs)",
          a.slots[k].prefix, b.slots[k].prefix);
    }
  }
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
