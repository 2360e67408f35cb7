// Off-chip storage (docs/model-parallelism.md, "Off-chip storage"): which weights, optimizer state
// and accumulators a session keeps in streaming memory instead of on the IPU, and the remote loads
// and stores that bring them on chip around the ops that use them.
//
// Where a tensor lives follows PopART's rule (StreamingMemoryOpInserter::determineTensorLocation):
// an entry of SessionOptions::tensorLocationSettingsOverride wins; else the settings of its kind
// (weightTensorLocationSettings, optimizerStateTensorLocationSettings,
// accumulatorTensorLocationSettings) with OffChip storage put it off chip when it has at least the
// settings' minElementsForOffChip elements. Activations stay on chip (PopART keeps them off chip
// only with execution phases, which xtrain refuses).
//
// The simulated device keeps an off-chip tensor's data where it keeps everything else, in host
// memory: loads and stores move nothing and cannot change a number. What they change is where the
// memory model charges the tensor (streaming memory; on chip only the loaded copy while an op
// uses it) and the simulated cycles (CycleModel::remoteTransferCycles).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <vector>

#include "ir/graph.hpp"
#include "replication/sharding.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

// One remote transfer around an op: `tensor` loaded from streaming memory before the op runs, or
// stored back after it (an op that writes the tensor in place: updates, accumulation).
struct RemoteTransfer {
  TensorId tensor;
  uint64_t bytes = 0;  // what moves: the tensor as streaming memory holds it (its shard with RTS)
  bool store = false;
};

struct OffChipPlan {
  // Each off-chip tensor and the bytes it keeps in streaming memory, per replica: the whole tensor,
  // or with replicated tensor sharding the replica's shard (as PopART shards remote buffers).
  std::map<TensorId, uint64_t> streamingBytes;
  // Per op that reads or writes off-chip tensors: its loads (before it, in input order), then its
  // stores (after it).
  std::map<OpId, std::vector<RemoteTransfer>> transfers;

  bool empty() const { return streamingBytes.empty(); }
  bool offChip(const TensorId& id) const { return streamingBytes.count(id) != 0; }
};

// What session creation checks of the location options alone: OffChip storage of activations
// (PopART needs execution phases for it) is an error naming activationTensorLocationSettings.
void checkOffChipOptions(const SessionOptions& options);

// The off-chip tensors of a built session graph (after the training graph: optimizer state and
// accumulators exist) and their transfers. `shards`: the replicated tensor sharding plan, by
// weight. An override of the state of one of the session's weights that its optimizer does not
// keep (Accl___W in an inference session) has no effect: PopART programs share options between
// sessions. Throws xtrain::error naming the entry for an override of any other tensor the graph
// does not have, an OffChip override of an activation, input or constant, and an override whose
// replicatedTensorSharding differs from its kind's settings (xtrain shards by kind).
OffChipPlan planOffChip(const ir::Graph& graph, const SessionOptions& options,
                        const std::map<TensorId, replication::ShardPlan>& shards);

}  // namespace xtrain::session

#pragma GCC visibility pop
