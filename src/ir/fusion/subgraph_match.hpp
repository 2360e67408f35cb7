// What the fusion patterns share (src/ir/fusion): reading scalar constants, seeing through chains
// of Mul as one product, and replacing a matched subgraph by one op.
#pragma once
#pragma GCC visibility push(default)

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::ir::fusion {

// A subgraph being matched: the ops taken so far and the tensors that must stay.
class SubgraphMatch {
 public:
  SubgraphMatch(const Graph& graph, const std::set<TensorId>& keep, OpId root)
      : graph_(&graph), keep_(&keep), root_(root) {
    ops_.insert(root);
  }

  const Graph& graph() const { return *graph_; }
  OpId root() const { return root_; }
  const std::set<OpId>& ops() const { return ops_; }

  // The ai.onnx op of `type` producing t, or nullptr; a match adds it to the subgraph.
  const Op* producer(const TensorId& t, const char* type);
  // The value of t when it is a one-element constant (FLOAT, DOUBLE or an integer type).
  std::optional<double> scalar(const TensorId& t) const;
  // The leaves of the product t: Mul operands, seen through Muls (added to the subgraph) whose
  // result only one op reads. The caller checks the leaves; a failed match discards the whole
  // SubgraphMatch.
  void productLeaves(const TensorId& t, std::vector<TensorId>& leaves);
  // Splits leaves into the product of the scalar constants and the other tensors.
  double constantFactor(const std::vector<TensorId>& leaves, std::vector<TensorId>& others) const;

  // Every op's output except the root's is read only inside the subgraph, is not a graph output
  // and not kept; every output has the FLOAT info `info`.
  bool selfContained(const TensorInfo& info) const;

 private:
  bool singleReader(const TensorId& t) const;

  const Graph* graph_;  // pointers, not references: a match is copied to try alternatives
  const std::set<TensorId>* keep_;
  OpId root_;
  std::set<OpId> ops_;
};

// a and b equal to within `rel` relative.
bool near(double a, double b, double rel = 1e-6);

// Replaces the matched ops by `replacement` (its outputs left empty: it takes the root's single
// output id and consumers). Scalar constants left unread are removed.
void replaceSubgraph(Graph& graph, const std::set<OpId>& ops, OpId root, OpSpec replacement);

}  // namespace xtrain::ir::fusion

#pragma GCC visibility pop
