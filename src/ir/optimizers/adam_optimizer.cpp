// The Adam family's hyperparameters (the public xtrain::Adam class); its rule is in
// src/device/kernels/adam_kernels.cpp.
#include <cmath>

#include "xtrain/error.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain {

const std::vector<std::string>& Adam::hyperParameterNames() {
  static const std::vector<std::string> names = {
      "defaultLearningRate", "defaultWeightDecay",   "defaultBeta1",  "defaultBeta2",
      "defaultEps",          "defaultMaxWeightNorm", "maxWeightNorm", "lossScaling"};
  return names;
}

const std::vector<std::string>& Adam::specificKeys() const {
  static const std::vector<std::string> keys = {"learningRate", "weightDecay", "beta1",
                                                "beta2",        "eps",         "maxWeightNorm"};
  return keys;
}

Adam::Adam(OptimizerValue lr, OptimizerValue wd, OptimizerValue beta1, OptimizerValue beta2,
           OptimizerValue eps, OptimizerValue ls, OptimizerValue mwn, AdamMode adamMode,
           WeightDecayMode weightDecayMode, DataType accumType, DataType accl1Type,
           DataType accl2Type, const std::vector<ClipNormSettings>& clipNormSettings,
           bool scaledOptimizerState)
    : mode_(adamMode),
      accl1Type_(checkStateType(accl1Type, "accl1Type")),
      accl2Type_(checkStateType(accl2Type, "accl2Type")) {
  if (scaledOptimizerState) {
    throw error("Adam: scaledOptimizerState is not supported (the moments are kept unscaled)");
  }
  defaults_ = {{"learningRate", lr}, {"weightDecay", wd}, {"beta1", beta1},
               {"beta2", beta2},     {"eps", eps},        {"maxWeightNorm", mwn}};
  lossScaling_ = ls;
  weightDecayMode_ = weightDecayMode;
  accumType_ = checkStateType(accumType, "accumType");
  setClipNormSettings(clipNormSettings);
  validate();
}

Adam::Adam(OptimizerValue lr, OptimizerValue wd, OptimizerValue beta1, OptimizerValue beta2,
           OptimizerValue eps, OptimizerValue ls, AdamMode adamMode,
           WeightDecayMode weightDecayMode, DataType accumType, DataType accl1Type,
           DataType accl2Type, const std::vector<ClipNormSettings>& clipNormSettings,
           bool scaledOptimizerState)
    : Adam(lr, wd, beta1, beta2, eps, ls, OptimizerValue(10.0f, true), adamMode, weightDecayMode,
           accumType, accl1Type, accl2Type, clipNormSettings, scaledOptimizerState) {}

Adam::Adam(const std::map<std::string, std::pair<float, bool>>& params, AdamMode adamMode,
           WeightDecayMode weightDecayMode, DataType accumType, DataType accl1Type,
           DataType accl2Type, const std::vector<ClipNormSettings>& clipNormSettings,
           bool scaledOptimizerState)
    : Adam(OptimizerValue(0.1f, false), OptimizerValue(0.0f, true), OptimizerValue(0.9f, true),
           OptimizerValue(0.999f, true), OptimizerValue(1e-6f, true), OptimizerValue(1.0f, true),
           OptimizerValue(10.0f, true), adamMode, weightDecayMode, accumType, accl1Type, accl2Type,
           clipNormSettings, scaledOptimizerState) {
  applyMap(params);
  validate();
}

void Adam::validate() const {
  forEachValues([&](const OptimizerValues& v, const std::string& where) {
    checkCommonValues(v, where);
    for (const char* beta : {"beta1", "beta2"}) {
      const float b = v.at(beta).val();
      if (!(b >= 0 && b <= 1)) throw error("Adam: {} {} for {} must be in [0, 1]", beta, b, where);
    }
    // Bias correction divides by 1 - beta^t.
    const bool correctsM =
        mode_ == AdamMode::Adam || mode_ == AdamMode::Lamb || mode_ == AdamMode::AdaMax;
    const bool correctsV = mode_ == AdamMode::Adam || mode_ == AdamMode::Lamb;
    for (auto [beta, corrected] : {std::pair{"beta1", correctsM}, std::pair{"beta2", correctsV}}) {
      if (corrected && v.at(beta).val() == 1.0f) {
        throw error("Adam: {} 1 for {} divides by zero in mode {}'s bias correction (1 - {}^t)",
                    beta, where, toString(mode_), beta);
      }
    }
    if (!(v.at("maxWeightNorm").val() >= 0)) {
      throw error("Adam: maxWeightNorm {} for {} must be >= 0", v.at("maxWeightNorm").val(), where);
    }
  });
}

}  // namespace xtrain
