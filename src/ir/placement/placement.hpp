// Placement of ops on the virtual graphs (the IPUs) of a replica: PopART's sharded model
// parallelism without pipelining (docs/model-parallelism.md).
//
// Contract:
//  - An op's virtual graph comes from its ONNX node's __ipu_number attribute (takePlacement, at
//    import), from autoVirtualGraph (VirtualGraphMode::Auto), or, for the ops the training graph
//    adds, from inheritPlacement (a gradient op runs where its forward op runs) and
//    completePlacement (the rest: accumulation and update ops on their weight's IPU).
//  - After insertIpuCopies every op reads only tensors that live on its own virtual graph: a tensor
//    read on another one is copied there by an IpuCopy op (ai.xtrain), one copy per tensor and
//    destination, named <tensor>_c<destination> as PopART names them. Tensors an op writes in place
//    never cross: such an op runs on the virtual graph of the tensors it writes.
//  - Knows nothing of devices: the session checks the virtual graphs against the replica's IPUs.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::ir {

// The ONNX node attributes PopART keeps placement in.
inline constexpr const char* kVirtualGraphAttribute = "__ipu_number";
inline constexpr const char* kPipelineStageAttribute = "__pipeline_stage";
inline constexpr const char* kExecutionPhaseAttribute = "__execution_phase";
// The copy between virtual graphs, and its attributes.
inline constexpr const char* kIpuCopyType = "IpuCopy";
inline constexpr const char* kIpuCopySource = "sourceIpu";
inline constexpr const char* kIpuCopyDestination = "destIpu";

// Takes the placement attributes out of an imported node's attributes (kernels never see them).
// An attribute that is not an integer >= 0 is an error naming `label` and the attribute.
Placement takePlacement(Attributes& attrs, const std::string& label);

// The id the next op added to `graph` gets: ops with an id from it on are new.
OpId nextOpId(const Graph& graph);

// Gives every op from `firstNew` on that has no virtual graph the placement `from` (the gradient
// ops of a forward op run where it runs, as PopART places them).
void inheritPlacement(Graph& graph, OpId firstNew, const Placement& from);

// Every op loses its virtual graph and pipeline stage (VirtualGraphMode::Off, in which PopART
// ignores the annotations). Returns how many ops had one.
int64_t clearVirtualGraphs(Graph& graph);

// VirtualGraphMode::Manual: every op must have a virtual graph. Throws PopART's error ("Either all
// Ops must have their virtual graph ids set, or none must", with the count per virtual graph and
// the unplaced ops) for a mix, and an error saying so when no op has one.
void checkManualPlacement(const Graph& graph);

// VirtualGraphMode::Auto: PopART's AutoVirtualGraph split of the (forward) graph over `ipus`
// virtual graphs by cost (ir/placement/auto_virtual_graph.cpp has the rule).
struct AutoSplitOptions {
  int64_t ipus = 1;
  std::vector<float> splitRatios;  // SessionOptions::virtualGraphSplitRatios; empty: equal parts
  bool training = false;
  bool gradientAccumulation = false;  // weights count twice (their accumulator)
};
void autoVirtualGraph(Graph& graph, const AutoSplitOptions& options);

// After the training graph: gives every op without a virtual graph one. Each `family` (a weight
// first, then its gradient accumulator, reduced gradient, hyperparameters, optimizer state and
// shards) lives on the weight's virtual graph (the lowest of its readers'), and the ops that touch
// a family's tensors run there; any other op runs where its first placed input is made, else where
// its outputs are read, else on virtual graph 0.
void completePlacement(Graph& graph, const std::vector<std::vector<TensorId>>& families);

struct IpuCopies {
  int64_t copies = 0;
  int64_t bytes = 0;  // per execution of every copy once
};
// Inserts the IpuCopy ops (see the contract). Every op must have a virtual graph.
IpuCopies insertIpuCopies(Graph& graph);

// The virtual graph each tensor lives on: its producer's (an IpuCopy's destination), else that of
// the ops that read or write it (the lowest), else 0.
std::map<TensorId, int64_t> tensorVirtualGraphs(const Graph& graph);

// 1 + the highest virtual graph of any op; 1 when no op has one.
int64_t virtualGraphCount(const Graph& graph);

// PopART's description of an op in placement errors: "Add 'n' (ai.onnx opset 13, inputs=[a, b],
// outputs=[c])".
std::string describeWithTensors(const Op& op);

}  // namespace xtrain::ir

#pragma GCC visibility pop
