// What a device kernel is told about an IR op: shared by lowering (one kernel per op of a session)
// and constant folding at import (one kernel per folded op).
#pragma once
#pragma GCC visibility push(default)

#include "device/kernel.hpp"
#include "ir/constant_folding.hpp"
#include "ir/graph.hpp"

namespace xtrain::session {

// The op's type, domain, attributes, description, its inputs' and outputs' infos (UNDEFINED for
// absent ones) and the inputs it modifies in place.
device::KernelSpec kernelSpecOf(const ir::Graph& graph, const ir::Op& op);

// Runs one op on constant inputs with its CPU kernel: the evaluator the ONNX import folds with.
// Seeds are 0 (folding skips random ops). Throws xtrain::error naming the op.
std::vector<HostTensor> evaluateConstantOp(const ir::Op& op, const ir::Graph& graph,
                                           const std::vector<const HostTensor*>& inputs);

}  // namespace xtrain::session

#pragma GCC visibility pop
