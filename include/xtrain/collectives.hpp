// CollectiveOperator: how a collective combines the values of the ranks of a group, with PopART's
// names. Used by the comm layer (src/comm/) and by the replicated ops of the IR.
#pragma once

#include <array>
#include <ostream>

namespace xtrain {

enum class CollectiveOperator {
  Add = 0,  // sum
  Mean,     // sum divided by the group size
  Mul,      // product
  Min,
  Max,
  LogicalAnd,  // 1 where every rank's value is non-zero, else 0
  LogicalOr,   // 1 where some rank's value is non-zero, else 0
  SquareAdd,   // sum of squares
  Local,       // no reduction: each rank keeps its own value
};

inline constexpr std::array<CollectiveOperator, 9> allCollectiveOperators = {
    CollectiveOperator::Add,       CollectiveOperator::Mean,      CollectiveOperator::Mul,
    CollectiveOperator::Min,       CollectiveOperator::Max,       CollectiveOperator::LogicalAnd,
    CollectiveOperator::LogicalOr, CollectiveOperator::SquareAdd, CollectiveOperator::Local};

inline const char* toString(CollectiveOperator op) {
  switch (op) {
    case CollectiveOperator::Add: return "Add";
    case CollectiveOperator::Mean: return "Mean";
    case CollectiveOperator::Mul: return "Mul";
    case CollectiveOperator::Min: return "Min";
    case CollectiveOperator::Max: return "Max";
    case CollectiveOperator::LogicalAnd: return "LogicalAnd";
    case CollectiveOperator::LogicalOr: return "LogicalOr";
    case CollectiveOperator::SquareAdd: return "SquareAdd";
    case CollectiveOperator::Local: return "Local";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, CollectiveOperator op) {
  return os << toString(op);
}

}  // namespace xtrain
