// Transpose/scale pattern of the fusion pass (src/ir/fusion/fusion.hpp): an ai.onnx MatMul whose
// operands come from Transposes or scalar Div/Mul, or whose result only goes to a Transpose or a
// scalar Div/Mul, becomes one ai.xtrain MatMulT reading the untransposed tensors through strides
// (permA, permB, transA, transB), writing its result permuted (permY) and scaling by alpha.
//
// Why: torch.onnx writes each nn.Linear on a 3-D input as MatMul(x, Transpose(W)), attention's head
// split and merge as Reshape + Transpose around the two batched MatMuls, k^T as one more
// Transpose, and the 1/sqrt(d) scale as a Div of q or of the scores. Unfused, each Transpose and
// Div is a pass over the tensor forward and another (its gradient) backward; the matmul kernel
// reads strided operands and writes strided results at the same speed.
//
// What folds: a Transpose swapping the last two dims of an operand, always (transA/transB);
// other permutations of the operands and of the result only when both operands have the same rank
// >= 3 and the same batch dims (the attention products), which MatMulT's gradient needs. Every
// folded tensor must be read only by the next op of the chain and be neither kept nor a graph
// output; every folded op must run where the MatMul runs (same placement).
#pragma once
#pragma GCC visibility push(default)

#include <set>

#include "ir/graph.hpp"

namespace xtrain::ir::fusion {

// When the FLOAT ai.onnx MatMul `root` has Transposes or scalar scales to fold, replaces them and
// it by one MatMulT and returns true.
bool fuseTransposeMatMul(Graph& graph, const std::set<TensorId>& keep, OpId root);

}  // namespace xtrain::ir::fusion

#pragma GCC visibility pop
