// The `reduction` attribute of PopART's loss ops (Nll, L1, IdentityLoss, Ctc): PopART's ONNX files
// hold it as a string ("Sum", "Mean", "None"), xtrain's Builder writes the int of ReductionType.
#pragma once
#pragma GCC visibility push(default)

#include "ir/graph.hpp"

namespace xtrain::ir {

// Makes the attribute canonical, the int of ReductionType (Mean when absent); a string or an int
// that names no ReductionType is an error naming the op.
void canonicalizeGraphcoreReduction(Op& op);

}  // namespace xtrain::ir

#pragma GCC visibility pop
