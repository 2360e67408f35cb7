// ReductionType: how a loss, an accumulation or a replicated reduction combines values (PopART's
// names and numbering; the ai.graphcore loss ops store it as the int attribute `reduction`).
#pragma once

namespace xtrain {

enum class ReductionType { Sum = 0, Mean = 1, NoReduction = 2 };

// How a Mean accumulation/replication reduction is computed
// (docs/replication-semantics.md section 2).
enum class MeanReductionStrategy { Running = 0, Post = 1 };

inline const char* toString(ReductionType t) {
  switch (t) {
    case ReductionType::Sum: return "Sum";
    case ReductionType::Mean: return "Mean";
    case ReductionType::NoReduction: return "NoReduction";
  }
  return "?";
}

}  // namespace xtrain
