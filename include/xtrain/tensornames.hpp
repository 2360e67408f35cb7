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

}  // namespace xtrain
