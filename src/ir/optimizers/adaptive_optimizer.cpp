// The Adaptive family's hyperparameters (the public xtrain::Adaptive class); its rule is in
// src/device/kernels/adaptive_kernels.cpp.
#include <cmath>

#include "xtrain/error.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain {

const std::vector<std::string>& Adaptive::hyperParameterNames() {
  static const std::vector<std::string> names = {"defaultLearningRate", "defaultWeightDecay",
                                                 "defaultAlpha",        "defaultMomentum",
                                                 "defaultEps",          "lossScaling"};
  return names;
}

const std::vector<std::string>& Adaptive::specificKeys() const {
  static const std::vector<std::string> keys = {"learningRate", "weightDecay", "alpha", "momentum",
                                                "eps"};
  return keys;
}

Adaptive::Adaptive(OptimizerValue lr, OptimizerValue wd, OptimizerValue alpha, OptimizerValue mm,
                   OptimizerValue eps, OptimizerValue ls, AdaptiveMode adaptiveMode,
                   WeightDecayMode weightDecayMode, DataType accumType, DataType accl1Type,
                   DataType accl2Type, DataType accl3Type, bool rmspropTFVariant,
                   const std::vector<ClipNormSettings>& clipNormSettings)
    : mode_(adaptiveMode),
      accl1Type_(checkStateType(accl1Type, "accl1Type")),
      accl2Type_(checkStateType(accl2Type, "accl2Type")),
      accl3Type_(checkStateType(accl3Type, "accl3Type")),
      rmspropTFVariant_(rmspropTFVariant) {
  if (rmspropTFVariant && adaptiveMode != AdaptiveMode::RMSProp &&
      adaptiveMode != AdaptiveMode::CenteredRMSProp) {
    // PopART's words.
    throw error(
        "The rmspropTFVariant parameter is only valid with the RMSProp and CenteredRMSProp "
        "optimizers.");
  }
  defaults_ = {
      {"learningRate", lr}, {"weightDecay", wd}, {"alpha", alpha}, {"momentum", mm}, {"eps", eps}};
  lossScaling_ = ls;
  weightDecayMode_ = weightDecayMode;
  accumType_ = checkStateType(accumType, "accumType");
  setClipNormSettings(clipNormSettings);
  validate();
}

Adaptive::Adaptive(const std::map<std::string, std::pair<float, bool>>& params,
                   AdaptiveMode adaptiveMode, WeightDecayMode weightDecayMode, DataType accumType,
                   DataType accl1Type, DataType accl2Type, DataType accl3Type,
                   bool rmspropTFVariant, const std::vector<ClipNormSettings>& clipNormSettings)
    : Adaptive(OptimizerValue(0.01f, false), OptimizerValue(0.0f, true),
               OptimizerValue(0.99f, true), OptimizerValue(0.0f, true), OptimizerValue(1e-6f, true),
               OptimizerValue(1.0f, true), adaptiveMode, weightDecayMode, accumType, accl1Type,
               accl2Type, accl3Type, rmspropTFVariant, clipNormSettings) {
  applyMap(params);
  validate();
}

bool Adaptive::requiresMomentum() const {
  auto needs = [](const OptimizerValues& v) {
    const OptimizerValue& mm = v.at("momentum");
    return !mm.isConst() || mm.val() != 0.0f;
  };
  if (needs(defaults_)) return true;
  for (const auto& [w, v] : specific_) {
    if (needs(v)) return true;
  }
  return false;
}

void Adaptive::validate() const {
  forEachValues([&](const OptimizerValues& v, const std::string& where) {
    checkCommonValues(v, where);
    for (const char* key : {"alpha", "momentum"}) {
      const float x = v.at(key).val();
      if (!(x >= 0 && x <= 1))
        throw error("Adaptive: {} {} for {} must be in [0, 1]", key, x, where);
    }
  });
}

}  // namespace xtrain
