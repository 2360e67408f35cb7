// PopART's reserved tensor-name prefixes (popart/tensornames.hpp): the names under which a session
// holds what it adds to a model. xtrain uses the same names for the tensors it keeps (optimizer
// state: Accl___<w>, Accl1___<w>, ..., Step___<w>; accumulators: Accum___<w>) and takes
// Gradient___<t> as the anchor of the loss's gradient with respect to tensor t of the model
// (docs/python.md, "Anchors"). The others are PopART's names for its own internal tensors, given so
// that programs that build names with them run; xtrain has no tensor of those names.
#pragma once

namespace xtrain {

constexpr const char* reservedGradientPrefix() {
  return "Gradient___";
}
constexpr const char* reservedUpdatedVarPrefix() {
  return "UpdatedVar___";
}
constexpr const char* reservedAccumPrefix() {
  return "Accum___";
}
constexpr const char* reservedAcclPrefix() {
  return "Accl___";
}
constexpr const char* reservedAccl1Prefix() {
  return "Accl1___";
}
constexpr const char* reservedAccl2Prefix() {
  return "Accl2___";
}
constexpr const char* reservedAccl3Prefix() {
  return "Accl3___";
}
constexpr const char* reservedStepPrefix() {
  return "Step___";
}
constexpr const char* reservedAcclToReducePrefix() {
  return "AcclIntoReduce___";
}
constexpr const char* reservedAcclToUpdatePrefix() {
  return "AcclIntoUpdate___";
}
constexpr const char* reservedAcclFinalOutPrefix() {
  return "AcclOutOfAcclUpdate___";
}
constexpr const char* reservedFinalReducedGradPrefix() {
  return "FinalReducedGradient___";
}
constexpr const char* reservedAdamUpdaterPrefix() {
  return "AdamUpdater___";
}
constexpr const char* reservedLambR1SqPrefix() {
  return "LambR1Sq___";
}
constexpr const char* reservedLambR2SqPrefix() {
  return "LambR2Sq___";
}
constexpr const char* reservedStashedPrefix() {
  return "Stashed___";
}
constexpr const char* reservedRestoredPrefix() {
  return "Restored___";
}
constexpr const char* reservedLossScalingPrefix() {
  return "lossScaling_";
}
constexpr const char* reservedRandomSeedPrefix() {
  return "randomSeed___";
}
constexpr const char* reservedSeedModifierPrefix() {
  return "randomSeedModifier___";
}
constexpr const char* reservedRemoteArgPrefix() {
  return "RemoteArg___";
}

// PopART's names of its optimizer hyperparameter tensors (<prefix><type> for the default value,
// <prefix><weight> for a weight's own). xtrain keeps these values on the host with the Optimizer:
// no tensor has these names (an anchor of one is refused, saying so).
constexpr const char* reservedDefaultWeightDecayScaleFactor0Prefix() {
  return "weightDecayScaleFactor0___default___";
}
constexpr const char* reservedSpecificWeightDecayScaleFactor0Prefix() {
  return "weightDecayScaleFactor0___specific___";
}
constexpr const char* reservedDefaultScaledLearningRate0Prefix() {
  return "scaledLearningRate0___default___";
}
constexpr const char* reservedSpecificScaledLearningRate0Prefix() {
  return "scaledLearningRate0___specific___";
}
constexpr const char* reservedDefaultScaledWeightDecay1Prefix() {
  return "scaledWeightDecay1___default___";
}
constexpr const char* reservedSpecificScaledWeightDecay1Prefix() {
  return "scaledWeightDecay1___specific___";
}
constexpr const char* reservedDefaultScaledLearningRate1Prefix() {
  return "scaledLearningRate1___default___";
}
constexpr const char* reservedSpecificScaledLearningRate1Prefix() {
  return "scaledLearningRate1___specific___";
}
constexpr const char* reservedDefaultDampeningScaleFactor1Prefix() {
  return "dampeningScaleFactor1___default___";
}
constexpr const char* reservedSpecificDampeningScaleFactor1Prefix() {
  return "dampeningScaleFactor1___specific___";
}
constexpr const char* reservedDefaultScaledMomentum1Prefix() {
  return "scaledMomentum1___default___";
}
constexpr const char* reservedSpecificScaledMomentum1Prefix() {
  return "scaledMomentum1___specific___";
}
constexpr const char* reservedDefaultLearningRatePrefix() {
  return "learningRate___default___";
}
constexpr const char* reservedSpecificLearningRatePrefix() {
  return "learningRate___specific___";
}
constexpr const char* reservedDefaultWeightDecayPrefix() {
  return "weightDecay___default___";
}
constexpr const char* reservedSpecificWeightDecayPrefix() {
  return "weightDecay___specific___";
}
constexpr const char* reservedDefaultLossScalingPrefix() {
  return "lossScaling___default___";
}
constexpr const char* reservedSpecificLossScalingPrefix() {
  return "lossScaling___specific___";
}
constexpr const char* reservedDefaultMaxWeightNormPrefix() {
  return "maxWeightNorm___default___";
}
constexpr const char* reservedSpecificMaxWeightNormPrefix() {
  return "maxWeightNorm___specific___";
}
constexpr const char* reservedDefaultAdamBeta1Prefix() {
  return "adamBeta1___default___";
}
constexpr const char* reservedSpecificAdamBeta1Prefix() {
  return "adamBeta1___specific___";
}
constexpr const char* reservedDefaultAdamBeta2Prefix() {
  return "adamBeta2___default___";
}
constexpr const char* reservedSpecificAdamBeta2Prefix() {
  return "adamBeta2___specific___";
}
constexpr const char* reservedDefaultAdamEpsPrefix() {
  return "adamEps___default___";
}
constexpr const char* reservedSpecificAdamEpsPrefix() {
  return "adamEps___specific___";
}
constexpr const char* reservedDefaultStepPrefix() {
  return "step___default___";
}
constexpr const char* reservedSpecificStepPrefix() {
  return "step___specific___";
}
constexpr const char* reservedAutomaticLossScalePrefix() {
  return "AutomaticLossScaleProxy___";
}

// The prefixes above, for checks of names.
inline constexpr const char* (*kReservedOptimizerHyperparameterPrefixes[])() = {
    &reservedDefaultWeightDecayScaleFactor0Prefix,
    &reservedSpecificWeightDecayScaleFactor0Prefix,
    &reservedDefaultScaledLearningRate0Prefix,
    &reservedSpecificScaledLearningRate0Prefix,
    &reservedDefaultScaledWeightDecay1Prefix,
    &reservedSpecificScaledWeightDecay1Prefix,
    &reservedDefaultScaledLearningRate1Prefix,
    &reservedSpecificScaledLearningRate1Prefix,
    &reservedDefaultDampeningScaleFactor1Prefix,
    &reservedSpecificDampeningScaleFactor1Prefix,
    &reservedDefaultScaledMomentum1Prefix,
    &reservedSpecificScaledMomentum1Prefix,
    &reservedDefaultLearningRatePrefix,
    &reservedSpecificLearningRatePrefix,
    &reservedDefaultWeightDecayPrefix,
    &reservedSpecificWeightDecayPrefix,
    &reservedDefaultLossScalingPrefix,
    &reservedSpecificLossScalingPrefix,
    &reservedDefaultMaxWeightNormPrefix,
    &reservedSpecificMaxWeightNormPrefix,
    &reservedDefaultAdamBeta1Prefix,
    &reservedSpecificAdamBeta1Prefix,
    &reservedDefaultAdamBeta2Prefix,
    &reservedSpecificAdamBeta2Prefix,
    &reservedDefaultAdamEpsPrefix,
    &reservedSpecificAdamEpsPrefix,
    &reservedDefaultStepPrefix,
    &reservedSpecificStepPrefix,
};

}  // namespace xtrain
