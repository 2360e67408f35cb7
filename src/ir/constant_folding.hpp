// Constant folding: an op whose result is known when the graph is built is replaced by Const
// tensors.
//
// Exporters compute shapes inside the graph (PyTorch writes `x.view(x.shape[0], -1)` as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape), and xtrain needs such values at compile time
// (Reshape's shape, Expand's shape, Resize's sizes, ...). Folding each op as it is added turns
// those chains into constants before the op that needs them is canonicalised.
//
// Contract:
//  - foldIfConstant(graph, op, evaluate) folds `op` when its result does not depend on data that
//    arrives at run time: Shape and Size (only their input's shape matters), and any other
//    deterministic ai.onnx op whose inputs are all Const tensors with values (or that has none left
//    after canonicalisation, like ConstantOfShape whose shape became an attribute). The op is
//    removed and its outputs become Const tensors of the same ids, infos and the computed values.
//    Returns whether it folded.
//  - Ops that draw random numbers, ops outside ai.onnx, ops with an output listed in `keep` (e.g.
//    the graph's outputs) and results larger than kMaxFoldedBytes are left alone.
//  - `evaluate` runs one op on its constant inputs (the session passes one made of the CPU kernels;
//    the IR has none). Empty: only Shape and Size fold.
//  - Weights (Variable tensors) never fold: gradients must flow through what is computed from them.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <set>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::ir {

// Computes the outputs of `op` (one HostTensor per output, absent outputs UNDEFINED) from the
// values of its inputs (nullptr for an absent input). Throws xtrain::error naming the op.
using ConstantEvaluator = std::function<std::vector<HostTensor>(
    const Op& op, const Graph& graph, const std::vector<const HostTensor*>& inputs)>;

inline constexpr size_t kMaxFoldedBytes = size_t{64} << 20;

bool foldIfConstant(Graph& graph, OpId op, const ConstantEvaluator& evaluate,
                    const std::set<TensorId>& keep = {});

}  // namespace xtrain::ir

#pragma GCC visibility pop
