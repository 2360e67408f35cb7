// PopART's loss reductions (graphcore_reduction.hpp).
#include "ir/ops/graphcore_reduction.hpp"

#include <string>
#include <variant>

#include "xtrain/error.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::ir {

void canonicalizeGraphcoreReduction(Op& op) {
  int64_t r = static_cast<int64_t>(ReductionType::Mean);
  auto it = op.attrs.all().find("reduction");
  if (it != op.attrs.all().end()) {
    if (const std::string* s = std::get_if<std::string>(&it->second)) {
      if (*s == "Sum") {
        r = 0;
      } else if (*s == "Mean") {
        r = 1;
      } else if (*s == "None" || *s == "NoReduction") {
        r = 2;
      } else {
        throw error("{}: reduction '{}' is not one of Sum, Mean, None", op.describe(), *s);
      }
    } else {
      r = op.attrs.getInt("reduction");
    }
  }
  if (r < 0 || r > 2) {
    throw error("{}: reduction {} is not a ReductionType (0 = Sum, 1 = Mean, 2 = NoReduction)",
                op.describe(), r);
  }
  op.attrs.set("reduction", r);
}

}  // namespace xtrain::ir
