// VariableSettings: how a variable (weight) is shared among replicas (replication-semantics.md
// section 4), with PopART's names. Replicas in one group of the shared-variable domain hold one
// value; different groups may hold different values. The retrieval mode says how many values
// weightsToHost returns.
//
// This header only declares the settings; the index arithmetic (group counts, representatives, host
// shapes) lives in the replication module.
#pragma once

#include "xtrain/sessionoptions.hpp"  // CommGroup, CommGroupType

namespace xtrain {

enum class VariableRetrievalMode {
  OnePerGroup = 0,        // one value per group (the group's representative)
  AllReduceReplicas = 1,  // unsupported in PopART; xtrain may reject it
  AllReplicas = 2,        // one value per replica
};

class VariableSettings {
 public:
  VariableSettings() = default;
  explicit VariableSettings(CommGroup sharedVariableDomain, VariableRetrievalMode retrievalMode =
                                                                VariableRetrievalMode::OnePerGroup)
      : sharedVariableDomain_(sharedVariableDomain), retrievalMode_(retrievalMode) {}
  explicit VariableSettings(VariableRetrievalMode retrievalMode) : retrievalMode_(retrievalMode) {}

  const CommGroup& getSharedVariableDomain() const { return sharedVariableDomain_; }
  VariableRetrievalMode getRetrievalMode() const { return retrievalMode_; }

  bool operator==(const VariableSettings& other) const = default;

 private:
  CommGroup sharedVariableDomain_{};
  VariableRetrievalMode retrievalMode_ = VariableRetrievalMode::OnePerGroup;
};

inline const char* toString(VariableRetrievalMode m) {
  switch (m) {
    case VariableRetrievalMode::OnePerGroup: return "OnePerGroup";
    case VariableRetrievalMode::AllReduceReplicas: return "AllReduceReplicas";
    case VariableRetrievalMode::AllReplicas: return "AllReplicas";
  }
  return "?";
}

}  // namespace xtrain
