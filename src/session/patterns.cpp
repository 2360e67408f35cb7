#include "xtrain/patterns.hpp"

#include <algorithm>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

struct PatternFacts {
  const char* name;
  bool onByDefault;
  bool mandatory;
};

// PopART's pre-alias patterns as its sources register them: the name, whether a Default set has it
// and whether every set must (runtime asserts on).
constexpr PatternFacts kPatterns[] = {
    {"AbsGradOp", true, true},
    {"AllReduceToIdentity", true, true},
    {"Atan2Arg0GradOp", true, true},
    {"Atan2Arg1GradOp", true, true},
    {"ConvDataGrad", true, true},
    {"ConvFlipWeightsDoubleFlip", true, false},
    {"ConvFlipWeightsGradOp", true, true},
    {"ConvTranspose", true, true},
    {"CosGradOp", true, true},
    {"CoshOp", true, true},
    {"DecomposeBinaryConstScalar", true, false},
    {"DivArg0GradOp", true, true},
    {"DivArg1GradOp", true, true},
    {"ExpGradOp", true, true},
    {"ExpandCast", true, false},
    {"Expm1GradOp", true, true},
    {"FmodArg0GradOp", true, true},
    {"InitAccumulate", true, false},
    {"LSTMOp", false, false},
    {"LambSerialisedWeight", true, false},
    {"Log1pGradOp", true, true},
    {"LogGradOp", true, true},
    {"LoopScanOut", true, true},
    {"MatMulLhsGradOp", true, true},
    {"MatMulOp", true, true},
    {"MatMulRhsGradOp", true, true},
    {"MulArgGradOp", true, true},
    {"NegativeOneScale", true, false},
    {"NlllWithSoftmaxGradDirect", true, false},
    {"OpToIdentity", true, false},
    {"PackedDataBlock", true, false},
    {"PadSum", true, false},
    {"PostNRepl", true, false},
    {"PowArg0GradOp", true, true},
    {"PowArg1GradOp", true, true},
    {"PreUniRepl", true, false},
    {"RandomNormalLikeOpPattern", true, true},
    {"RandomUniformLikeOpPattern", true, true},
    {"ReciprocalGradOp", true, true},
    {"RemoveUnnecessaryLossGradCast", true, false},
    {"ScanToLoop", true, true},
    {"SinGradOp", true, true},
    {"Slice2SliceSubsample", false, false},
    {"SoftmaxGradDirect", true, false},
    {"SplitGather", false, false},
    {"SplitGradOpToConcat", true, false},
    {"SplitOp", true, false},
    {"SqrtGradOp", true, true},
    {"SubtractArg1GradOp", true, true},
    {"SumToAdd", true, false},
    {"TiedGather", false, false},
    {"TiedGatherAccumulate", false, false},
    {"TransposeToIdentityOrReshapePattern", true, false},
    {"UpsampleToResize", true, false},
    {"ZerosLikeOpPattern", true, true},
};

const PatternFacts* factsOf(const std::string& name) {
  for (const auto& p : kPatterns) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

[[noreturn]] void unknown(const std::string& name) {
  if (name == "Inplace") throw error("Unknown pattern {}, did you mean InPlace?", name);
  throw error("Unknown pattern {}", name);
}

}  // namespace

Patterns::Patterns() : Patterns(PatternsLevel::Default) {}

Patterns::Patterns(PatternsLevel level) {
  for (const auto& p : kPatterns) {
    bool on = false;
    switch (level) {
      case PatternsLevel::NoPatterns: on = false; break;
      case PatternsLevel::Minimal: on = p.mandatory; break;
      case PatternsLevel::Default: on = p.onByDefault; break;
      case PatternsLevel::All: on = true; break;
    }
    enabled_[p.name] = on;
  }
  inPlace_ = level == PatternsLevel::Default || level == PatternsLevel::All;
}

Patterns::Patterns(const std::vector<std::string>& names) : Patterns(PatternsLevel::NoPatterns) {
  for (const auto& name : names) enablePattern(name, true);
}

bool Patterns::isPatternEnabled(const std::string& name) const {
  if (name == "InPlace") return inPlace_;
  if (name == "UpdateInplacePrioritiesForIpu") return updateInplacePriorities_;
  const auto it = enabled_.find(name);
  if (it == enabled_.end()) unknown(name);
  return it->second;
}

Patterns& Patterns::enablePattern(const std::string& name, bool enabled) {
  if (name == "InPlace") return enableInPlace(enabled);
  if (name == "UpdateInplacePrioritiesForIpu") return enableUpdateInplacePrioritiesForIpu(enabled);
  const auto it = enabled_.find(name);
  if (it == enabled_.end()) unknown(name);
  it->second = enabled;
  return *this;
}

Patterns& Patterns::enableInPlace(bool enabled) {
  inPlace_ = enabled;
  return *this;
}

Patterns& Patterns::enableUpdateInplacePrioritiesForIpu(bool enabled) {
  updateInplacePriorities_ = enabled;
  return *this;
}

Patterns& Patterns::enableRuntimeAsserts(bool enabled) {
  runtimeAsserts_ = enabled;
  return *this;
}

void Patterns::ensureAllMandatoryPreAliasPatternsAreEnabled() const {
  for (const auto& p : kPatterns) {
    if (p.mandatory && !enabled_.at(p.name)) throw error("Pattern '{}' must be enabled", p.name);
  }
}

std::vector<std::string> Patterns::enabledPatternNames() const {
  std::vector<std::string> out;
  for (const auto& [name, on] : enabled_) {
    if (on) out.push_back(name);
  }
  return out;
}

std::vector<std::string> Patterns::getAllPreAliasPatternNames() {
  std::vector<std::string> out;
  for (const auto& p : kPatterns) out.emplace_back(p.name);
  return out;
}

bool Patterns::isMandatory(const std::string& name) {
  const PatternFacts* p = factsOf(name);
  return p != nullptr && p->mandatory;
}

bool Patterns::operator==(const Patterns& other) const {
  return enabled_ == other.enabled_ && inPlace_ == other.inPlace_ &&
         updateInplacePriorities_ == other.updateInplacePriorities_;
}

}  // namespace xtrain
