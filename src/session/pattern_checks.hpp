// What a Patterns set with a mandatory pattern disabled (runtime asserts off) means for a session.
//
// PopART has no Poplar lowering for some ops: a mandatory pattern rewrites each into simpler ops
// (Cosh into Exp arithmetic, CosGrad into Sin and Mul, ...). With that pattern disabled the op
// stays and PopART refuses the graph. xtrain computes these ops without rewrites, but keeps
// PopART's contract: the session refuses such a graph, naming the op and the pattern to enable.
// Only the forward ops and gradients that the graph actually has (a gradient only for an input
// the loss needs one for) are refused.
#pragma once
#pragma GCC visibility push(default)

#include <vector>

#include "ir/graph.hpp"
#include "xtrain/patterns.hpp"

namespace xtrain::session {

// Throws xtrain::error for the first forward op of `graph` that PopART can run only after a
// pattern `patterns` disables (Cosh: CoshOp, ConvTranspose: ConvTranspose, ...).
void checkForwardOpsAgainstPatterns(const ir::Graph& graph, const Patterns& patterns);

// Throws xtrain::error when the gradient of an input of `op` with needsGrad[i] set is one PopART
// makes only with a pattern `patterns` disables (Sqrt: SqrtGradOp, input 1 of Sub:
// SubtractArg1GradOp, ...).
void checkGradientAgainstPatterns(const ir::Op& op, const std::vector<bool>& needsGrad,
                                  const Patterns& patterns);

}  // namespace xtrain::session

#pragma GCC visibility pop
