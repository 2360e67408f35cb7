// Graph fusion: subgraphs that exporters write for one mathematical function become one op, so
// that the forward pass runs one kernel instead of several and autodiff writes one gradient op
// instead of the chain rule through each piece (and keeps fewer intermediates alive).
//
// Contract:
//  - fuseGraph runs on a forward graph, before autodiff. Each pattern family has its own file
//    (gelu_fusion.cpp: torch.onnx's tanh-GELU and erf-GELU become ai.xtrain Gelu; silu_fusion.cpp:
//    Mul(x, Sigmoid(x)) becomes ai.graphcore Swish; transpose_matmul_fusion.cpp: a MatMul with the
//    Transposes and scalar scales around it becomes ai.xtrain MatMulT). The MatMul pattern runs
//    last, so that it does not take a GELU's scalar Mul as its own.
//  - A subgraph is fused only when none of its intermediate tensors is needed elsewhere: each is
//    read only by ops of the subgraph, and is neither a graph output nor in `keep` (the session's
//    anchors and loss). The subgraph's result keeps its tensor id, so its consumers, anchors and
//    the graph's outputs still find it.
//  - Only FLOAT subgraphs fuse (FLOAT16 graphs round every intermediate, the fused op would not).
//  - Deterministic: ops are visited in id order.
//  - The session skips the pass when the environment variable XTRAIN_FUSION is "0"
//    (docs/performance.md), to compare fused and unfused runs.
#pragma once
#pragma GCC visibility push(default)

#include <set>

#include "ir/graph.hpp"

namespace xtrain::ir {

struct FusionReport {
  int gelu = 0;    // GELU subgraphs replaced by one Gelu op
  int silu = 0;    // Mul(x, Sigmoid(x)) replaced by one Swish op
  int matmul = 0;  // MatMuls with Transposes or scalar scales folded into one MatMulT
  int total() const { return gelu + silu + matmul; }
};

FusionReport fuseGraph(Graph& graph, const std::set<TensorId>& keep);

}  // namespace xtrain::ir

#pragma GCC visibility pop
