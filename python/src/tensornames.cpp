// PopART's reserved tensor-name prefixes as module functions (popart.reservedGradientPrefix(), ...;
// xtrain/tensornames.hpp says which name xtrain's tensors).
#include "xtrain/tensornames.hpp"

#include <pybind11/pybind11.h>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindTensorNames(py::module_& m) {
  constexpr std::pair<const char*, const char* (*)()> kPrefixes[] = {
      {"reservedGradientPrefix", &reservedGradientPrefix},
      {"reservedUpdatedVarPrefix", &reservedUpdatedVarPrefix},
      {"reservedAccumPrefix", &reservedAccumPrefix},
      {"reservedAcclPrefix", &reservedAcclPrefix},
      {"reservedAccl1Prefix", &reservedAccl1Prefix},
      {"reservedAccl2Prefix", &reservedAccl2Prefix},
      {"reservedAccl3Prefix", &reservedAccl3Prefix},
      {"reservedStepPrefix", &reservedStepPrefix},
      {"reservedAcclToReducePrefix", &reservedAcclToReducePrefix},
      {"reservedAcclToUpdatePrefix", &reservedAcclToUpdatePrefix},
      {"reservedAcclFinalOutPrefix", &reservedAcclFinalOutPrefix},
      {"reservedFinalReducedGradPrefix", &reservedFinalReducedGradPrefix},
      {"reservedAdamUpdaterPrefix", &reservedAdamUpdaterPrefix},
      {"reservedLambR1SqPrefix", &reservedLambR1SqPrefix},
      {"reservedLambR2SqPrefix", &reservedLambR2SqPrefix},
      {"reservedStashedPrefix", &reservedStashedPrefix},
      {"reservedRestoredPrefix", &reservedRestoredPrefix},
      {"reservedLossScalingPrefix", &reservedLossScalingPrefix},
      {"reservedRandomSeedPrefix", &reservedRandomSeedPrefix},
      {"reservedSeedModifierPrefix", &reservedSeedModifierPrefix},
      {"reservedRemoteArgPrefix", &reservedRemoteArgPrefix},
      {"reservedDefaultWeightDecayScaleFactor0Prefix", &reservedDefaultWeightDecayScaleFactor0Prefix},
      {"reservedSpecificWeightDecayScaleFactor0Prefix", &reservedSpecificWeightDecayScaleFactor0Prefix},
      {"reservedDefaultScaledLearningRate0Prefix", &reservedDefaultScaledLearningRate0Prefix},
      {"reservedSpecificScaledLearningRate0Prefix", &reservedSpecificScaledLearningRate0Prefix},
      {"reservedDefaultScaledWeightDecay1Prefix", &reservedDefaultScaledWeightDecay1Prefix},
      {"reservedSpecificScaledWeightDecay1Prefix", &reservedSpecificScaledWeightDecay1Prefix},
      {"reservedDefaultScaledLearningRate1Prefix", &reservedDefaultScaledLearningRate1Prefix},
      {"reservedSpecificScaledLearningRate1Prefix", &reservedSpecificScaledLearningRate1Prefix},
      {"reservedDefaultDampeningScaleFactor1Prefix", &reservedDefaultDampeningScaleFactor1Prefix},
      {"reservedSpecificDampeningScaleFactor1Prefix", &reservedSpecificDampeningScaleFactor1Prefix},
      {"reservedDefaultScaledMomentum1Prefix", &reservedDefaultScaledMomentum1Prefix},
      {"reservedSpecificScaledMomentum1Prefix", &reservedSpecificScaledMomentum1Prefix},
      {"reservedDefaultLearningRatePrefix", &reservedDefaultLearningRatePrefix},
      {"reservedSpecificLearningRatePrefix", &reservedSpecificLearningRatePrefix},
      {"reservedDefaultWeightDecayPrefix", &reservedDefaultWeightDecayPrefix},
      {"reservedSpecificWeightDecayPrefix", &reservedSpecificWeightDecayPrefix},
      {"reservedDefaultLossScalingPrefix", &reservedDefaultLossScalingPrefix},
      {"reservedSpecificLossScalingPrefix", &reservedSpecificLossScalingPrefix},
      {"reservedDefaultMaxWeightNormPrefix", &reservedDefaultMaxWeightNormPrefix},
      {"reservedSpecificMaxWeightNormPrefix", &reservedSpecificMaxWeightNormPrefix},
      {"reservedDefaultAdamBeta1Prefix", &reservedDefaultAdamBeta1Prefix},
      {"reservedSpecificAdamBeta1Prefix", &reservedSpecificAdamBeta1Prefix},
      {"reservedDefaultAdamBeta2Prefix", &reservedDefaultAdamBeta2Prefix},
      {"reservedSpecificAdamBeta2Prefix", &reservedSpecificAdamBeta2Prefix},
      {"reservedDefaultAdamEpsPrefix", &reservedDefaultAdamEpsPrefix},
      {"reservedSpecificAdamEpsPrefix", &reservedSpecificAdamEpsPrefix},
      {"reservedDefaultStepPrefix", &reservedDefaultStepPrefix},
      {"reservedSpecificStepPrefix", &reservedSpecificStepPrefix},
      {"reservedAutomaticLossScalePrefix", &reservedAutomaticLossScalePrefix},
  };
  for (const auto& [name, prefix] : kPrefixes) {
    m.def(name, [prefix = prefix] { return std::string(prefix()); });
  }
}

}  // namespace xtrain::python
