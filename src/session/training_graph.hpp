// The training graph: what a TrainingSession adds to the model's graph. The loss is checked before
// anything else names it; then the backward pass (seeded by loss scaling), the optimizer's updates
// (plain, grouped or sharded: HostState plans and follows them) and BatchNorm's running statistics;
// then, if asked, recomputation. Before any of it, the model's fingerprint that checkpoints are
// checked against.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>

#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "replication/replica_layout.hpp"
#include "session/host_state.hpp"
#include "session/session_config.hpp"
#include "session/update_control.hpp"

namespace xtrain::session {

// The optimizer's updates in the graph, and the options they were made with.
struct TrainingGraph {
  ir::OptimizerGraph updates;
  ir::OptimizerTransformOptions options;
};

// Throws unless `loss` is a scalar FLOAT or FLOAT16 tensor of `graph`: training minimises one
// number, and a loss of several elements would be trained on their sum, silently.
void checkLoss(const ir::Graph& graph, const TensorId& loss);
// The tensors whose gradients the DataFlow anchors (Gradient___<t>, PopART's
// reservedGradientPrefix): t for each, in the DataFlow's order.
std::vector<TensorId> gradientAnchorTargets(const DataFlow& dataFlow);
// Adds the backward pass from config.loss (its seed from updates.addLossScaling), the optimizer's
// updates of every weight that reaches the loss (the others are warned about), the anchored
// gradients (Gradient___<t>, a copy of d(loss)/dt; a target without one is an error), and the
// copies that update BatchNorm's running statistics. `host` records the sharded weights and the
// state that follows grouped and sharded ones. The caller hands the result to
// UpdateControl::setUpdates once it has its final address.
TrainingGraph buildTrainingGraph(ir::Graph& graph, const SessionConfig& config,
                                 const replication::ReplicaLayout& layout,
                                 int64_t accumulationFactor, HostState& host,
                                 UpdateControl& updates);
// An InferenceSession's writes of the variables the model's ai.graphcore CopyVarUpdate ops update
// (PopTorch's buffers that forward changes in place), in the Accumulate phase the runtime runs
// after each micro-batch's forward pass. Returns how many.
size_t addInferenceVariableCopies(ir::Graph& graph);
// A hash of the model's operations and weights (names, types, per-replica shapes): what a
// checkpoint must have been written for.
std::string graphFingerprint(const ir::Graph& graph);
// SessionOptions::autoRecomputation on the training graph (ir/recompute/recompute.hpp); the
// anchors and the loss are read by the host, so the ops that make them are not recomputed.
void applyRecomputation(ir::Graph& graph, const SessionConfig& config);

}  // namespace xtrain::session

#pragma GCC visibility pop
