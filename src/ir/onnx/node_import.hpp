// What the ONNX importer's node loop (onnx_import.cpp) and the control-flow importer
// (control_flow_import.cpp) share: adding one node of a graph or of a subgraph body to the IR.
//
// Includes protobuf: include only from src/ir/onnx/.
//
// Contract: a node's inputs and outputs are given as the IR ids they resolve to (a subgraph's
// tensors get fresh ids each time its body is inlined); every op added is folded into Const tensors
// when its result is known at import (constant_folding.hpp), except the ops writing `keep`.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/onnx/onnx_import.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"

#pragma GCC visibility push(default)

namespace xtrain::ir::onnximport {

struct NodeImporter {
  Graph& graph;
  std::map<std::string, int> opsets;
  const OnnxImportOptions& options;
  BatchNormRunningVariance runningVariance = BatchNormRunningVariance::Onnx;
  std::set<TensorId> keep;  // the graph's outputs: never folded
  // The main graph's tensor names, which the ids given to inlined tensors must not take.
  std::set<TensorId> reserved;
  // Ops added by inlining subgraphs so far (checked against a limit, control_flow_import.cpp).
  size_t inlinedOps = 0;
};

// Adds a Constant node's value as the Const tensor `output`.
void addConstantNode(Graph& graph, const onnx::NodeProto& node, const std::string& label,
                     const TensorId& output);

// Adds one node (neither Constant nor control flow) as an op reading `inputs` and writing
// `outputs`, named `name`, then folds it when its result is known.
void addNodeOp(NodeImporter& imp, const onnx::NodeProto& node, const std::string& label,
               std::vector<TensorId> inputs, std::vector<TensorId> outputs,
               const std::string& name);

// Nodes imported as several ai.onnx ops rather than one op of their own (import_expansions.cpp):
// PopART's ai.graphcore LSTM (Gather, Transpose, Reshape, Slice, Concat, LSTM, Squeeze) and an
// ai.onnx BatchNormalization with spatial=0 (Reshapes around a spatial one). `node` is the node's
// spec as addNodeOp has made it (inputs, outputs, attributes, name, placement, opset).
bool isPopartLstm(const std::string& domain, const std::string& type);
void importPopartLstm(Graph& graph, const OpSpec& node, const std::string& label);
bool isNonSpatialBatchNorm(const std::string& domain, const std::string& type,
                           const Attributes& attrs);
void importNonSpatialBatchNorm(Graph& graph, const OpSpec& node, const std::string& label);

// Tensor names visible to a subgraph body: its own (inputs, initializers, node outputs), then its
// enclosing bodies', then the main graph's (which keep their ONNX names in the IR).
struct Scope {
  std::map<std::string, TensorId> names;
  const Scope* parent = nullptr;
  // The IR id of `name`, or "" when no scope and not the graph defines it.
  TensorId find(const std::string& name, const Graph& graph) const;
};

// ai.onnx If, Loop and Scan, ai.graphcore Call: nodes with subgraphs, which the importer inlines.
bool isControlFlow(const onnx::NodeProto& node);
// The subgraph attributes of a node (bodies, branches, callee), for checks that walk a model.
std::vector<const onnx::GraphProto*> subgraphsOf(const onnx::NodeProto& node);

// Inlines a control-flow node: its subgraphs' ops are added to the graph (a Call's callee once, an
// If's branch, a Loop's or Scan's body once per iteration) and its results written to `outputs`.
// `scope` resolves the names its subgraphs read from enclosing graphs.
void importControlFlow(NodeImporter& imp, const onnx::NodeProto& node, const std::string& label,
                       const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
                       const Scope& scope);

}  // namespace xtrain::ir::onnximport

#pragma GCC visibility pop
