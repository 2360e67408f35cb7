// SessionOptions::virtualGraphMode in a session (docs/model-parallelism.md): where the ops of a
// replica run among its IPUs, and the checks that the device has them.
//
//   placeForwardGraph   at creation, on the imported (and fused) model: Off drops the placement
//                       annotations (as PopART does), Manual checks that every op has one, Auto
//                       splits the model over the replica's IPUs; ExecutionPhases is refused.
//   placeTrainingGraph  at creation, once the training graph is built: places the ops it added
//                       (gradients where their forward op runs, accumulation and updates where
//                       their weight lives) and inserts the IpuCopy ops between IPUs.
//   checkVirtualGraphs  at prepareDevice (as PopART checks when it lowers): every op's virtual
//                       graph must be an IPU of its replica.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>

#include "ir/graph.hpp"
#include "ir/optimizers/optimizer_transform.hpp"
#include "ir/placement/pipeline_stages.hpp"
#include "ir/placement/placement.hpp"
#include "session/session_config.hpp"

namespace xtrain::session {

// The IPUs of one replica: the device's IPUs over the local replicas (1 on a CPU device).
int64_t ipusPerReplica(const DeviceInfo& device, int64_t localReplicas);

// With SessionOptions::enablePipelining it also gives every op its pipeline stage and checks the
// options against them (session/pipeline_plan.hpp); returns the number of pipeline stages (0 when
// not pipelining).
int64_t placeForwardGraph(ir::Graph& graph, const SessionConfig& config, int64_t localReplicas);

// Returns the copies inserted (none when virtualGraphMode is Off).
ir::IpuCopies placeTrainingGraph(ir::Graph& graph, const SessionConfig& config,
                                 const ir::OptimizerGraph& updates);

// Throws PopART's "<op> has been assigned to an invalid virtual graph N. numIPUs = K." with what
// would work, for the first op in schedule order placed outside the replica's IPUs.
void checkVirtualGraphs(const ir::Graph& graph, const SessionConfig& config, int64_t localReplicas);

}  // namespace xtrain::session

#pragma GCC visibility pop
