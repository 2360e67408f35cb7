// chargeMemory (memory_plan.hpp): the activations at the schedule's peak, and each tensor by class.
#include "session/memory_plan.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "common/check.hpp"
#include "ir/placement/placement.hpp"
#include "session/buffer_plan.hpp"

namespace xtrain::session {

namespace {

std::optional<device::TensorClass> classOf(ir::TensorKind kind) {
  switch (kind) {
    case ir::TensorKind::Variable: return device::TensorClass::Weights;
    case ir::TensorKind::OptimizerState: return device::TensorClass::OptimizerState;
    case ir::TensorKind::Accumulator: return device::TensorClass::Accumulators;
    case ir::TensorKind::Stream: return device::TensorClass::Streams;
    case ir::TensorKind::Const: return device::TensorClass::Other;
    case ir::TensorKind::Activation: return std::nullopt;
  }
  return std::nullopt;
}

// The activations of one IPU (`onIpu`) live at the peak of that IPU's schedule (by bytes).
std::vector<const ir::Tensor*> peakActivations(const ir::Graph& graph,
                                               const std::function<bool(const TensorId&)>& onIpu) {
  const std::vector<OpId> order = graph.schedule();
  std::map<OpId, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Last use of each activation (its producer's position when nothing reads it).
  std::map<TensorId, size_t> lastUse;
  for (const auto& [id, t] : graph.tensors()) {
    if (t->kind != ir::TensorKind::Activation || t->producer < 0 || !onIpu(id)) continue;
    size_t last = position.at(t->producer);
    for (OpId c : t->consumers) last = std::max(last, position.at(c));
    lastUse[id] = last;
  }
  std::set<const ir::Tensor*> live;
  std::vector<const ir::Tensor*> peak;
  int64_t liveBytes = 0, peakBytes = -1;
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Op& op = graph.op(order[i]);
    for (const auto& out : op.outputs) {
      if (out.empty() || !lastUse.count(out)) continue;
      const ir::Tensor& t = graph.tensor(out);
      if (live.insert(&t).second) liveBytes += t.info.nbytes();
    }
    if (liveBytes > peakBytes) {
      peakBytes = liveBytes;
      peak.assign(live.begin(), live.end());
    }
    for (auto it = live.begin(); it != live.end();) {
      if (lastUse.at((*it)->id) <= i) {
        liveBytes -= (*it)->info.nbytes();
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  return peak;
}

// The largest on-chip copy of the off-chip tensors among `mine` that one op loads at once: the op
// and its bytes (a weight kept as a shard loads nothing more: its gathered temporary is charged
// already).
std::pair<OpId, uint64_t> offChipStaging(const ir::Graph& graph, const OffChipPlan& offChip,
                                         const std::set<TensorId>& mine,
                                         const std::map<TensorId, replication::ShardPlan>& shards) {
  std::pair<OpId, uint64_t> most{-1, 0};
  for (const auto& [opId, transfers] : offChip.transfers) {
    uint64_t bytes = 0;
    for (const RemoteTransfer& t : transfers) {
      if (t.store || !mine.count(t.tensor)) continue;
      auto shard = shards.find(t.tensor);
      if (shard != shards.end() && shard->second.weightStored) continue;
      bytes += static_cast<uint64_t>(graph.tensor(t.tensor).info.nbytes());
    }
    if (bytes > most.second) most = {opId, bytes};
  }
  return most;
}

// What one IPU of every replica holds: its tensors by class, its buffer plan's block and its
// activations kept out of the block that are live at its peak; its off-chip tensors in its
// streaming memory.
void chargeIpu(device::MemoryModel& model, const ir::Graph& graph,
               const std::vector<int>& replicaIpus,
               const std::map<TensorId, replication::ShardPlan>& shards,
               const std::vector<TensorId>& ids, const std::set<TensorId>& anchors,
               const OffChipPlan& offChip) {
  const BufferPlan plan = planBuffers(graph, ids, anchors, bufferReuseFromEnvironment());
  std::set<TensorId> mine(ids.begin(), ids.end()), planned;
  for (size_t b = 0; b < ids.size(); ++b) {
    if (plan.shared(b)) planned.insert(ids[b]);
  }
  std::vector<const ir::Tensor*> peak = peakActivations(
      graph, [&](const TensorId& id) { return mine.count(id) != 0 && !planned.count(id); });
  const auto staging = offChipStaging(graph, offChip, mine, shards);
  for (const int ipu : replicaIpus) {
    for (const auto& id : ids) {
      const ir::Tensor& t = graph.tensor(id);
      auto shard = shards.find(id);
      if (auto off = offChip.streamingBytes.find(id); off != offChip.streamingBytes.end()) {
        // In streaming memory (as a shard with RTS); loaded around its uses (the staging below,
        // and a sharded weight's gathered temporary).
        model.addStreaming(ipu, *classOf(t.kind), id, off->second);
        if (shard != shards.end() && shard->second.weightStored) {
          model.add(ipu, device::TensorClass::Activations, id + " (gathered)",
                    static_cast<uint64_t>(t.info.nbytes()));
        }
      } else if (shard != shards.end() && shard->second.weightStored) {
        // A weight kept as a shard: its shard resides, the whole weight is gathered into a
        // temporary before use (charged with the activations).
        model.add(ipu, device::TensorClass::Weights, id + " (shard)",
                  static_cast<uint64_t>(shard->second.shard) * sizeof(float));
        model.add(ipu, device::TensorClass::Activations, id + " (gathered)",
                  static_cast<uint64_t>(t.info.nbytes()));
      } else if (auto cls = classOf(t.kind)) {
        model.add(ipu, *cls, id, static_cast<uint64_t>(t.info.nbytes()));
      }
    }
    if (plan.blockBytes > 0) {
      model.add(ipu, device::TensorClass::Activations,
                format("buffer plan: {} activations in one block", plan.plannedTensors),
                plan.blockBytes);
    }
    for (const ir::Tensor* t : peak) {
      model.add(ipu, device::TensorClass::Activations, t->id,
                static_cast<uint64_t>(t->info.nbytes()));
    }
    if (staging.second > 0) {
      model.add(ipu, device::TensorClass::Activations,
                format("off-chip staging: {}", graph.op(staging.first).describe()), staging.second);
    }
  }
}

}  // namespace

device::MemoryModel chargeMemory(const ir::Graph& graph, const DeviceInfo& device,
                                 int64_t localReplicas,
                                 const std::map<TensorId, replication::ShardPlan>& shards,
                                 const std::vector<TensorId>& anchors, const OffChipPlan& offChip) {
  device::MemoryModel model = device::MemoryModel::forDevice(device);
  const int ipusPerReplica =
      std::max(1, model.numIpus() / static_cast<int>(std::max<int64_t>(1, localReplicas)));
  // Each tensor on the IPU of its replica that its virtual graph names (0 without placement).
  std::map<int64_t, std::vector<TensorId>> byIpu;
  for (const auto& [id, vg] : ir::tensorVirtualGraphs(graph)) {
    XT_CHECK(vg >= 0 && vg < ipusPerReplica, "tensor {} on virtual graph {} of {}", id, vg,
             ipusPerReplica);
    byIpu[vg].push_back(id);
  }
  const std::set<TensorId> keep(anchors.begin(), anchors.end());
  for (const auto& [vg, ids] : byIpu) {
    std::vector<int> ipus;
    for (int64_t r = 0; r < localReplicas; ++r) {
      const int ipu = static_cast<int>(r) * ipusPerReplica + static_cast<int>(vg);
      if (ipu < model.numIpus()) ipus.push_back(ipu);
    }
    chargeIpu(model, graph, ipus, shards, ids, keep, offChip);
  }
  return model;
}

}  // namespace xtrain::session
