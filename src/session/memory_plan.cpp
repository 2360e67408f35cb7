// chargeMemory (memory_plan.hpp): the activations at the schedule's peak, and each tensor by class.
#include "session/memory_plan.hpp"

#include <algorithm>
#include <set>

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

// The activations live at the schedule's peak (by bytes).
std::vector<const ir::Tensor*> peakActivations(const ir::Graph& graph) {
  const std::vector<OpId> order = graph.schedule();
  std::map<OpId, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Last use of each activation (its producer's position when nothing reads it).
  std::map<TensorId, size_t> lastUse;
  for (const auto& [id, t] : graph.tensors()) {
    if (t->kind != ir::TensorKind::Activation || t->producer < 0) continue;
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
      if (out.empty()) continue;
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

}  // namespace

device::MemoryModel chargeMemory(const ir::Graph& graph, const DeviceInfo& device,
                                 int64_t localReplicas,
                                 const std::map<TensorId, replication::ShardPlan>& shards,
                                 const std::vector<TensorId>& anchors) {
  device::MemoryModel model = device::MemoryModel::forDevice(device);
  const int ipusPerReplica =
      std::max(1, model.numIpus() / static_cast<int>(std::max<int64_t>(1, localReplicas)));
  std::vector<const ir::Tensor*> peak = peakActivations(graph);
  std::vector<TensorId> ids;
  for (const auto& [id, t] : graph.tensors()) ids.push_back(id);
  const BufferPlan plan = planBuffers(
      graph, ids, std::set<TensorId>(anchors.begin(), anchors.end()), bufferReuseFromEnvironment());
  std::set<TensorId> planned;
  for (size_t b = 0; b < ids.size(); ++b) {
    if (plan.shared(b)) planned.insert(ids[b]);
  }
  std::erase_if(peak, [&](const ir::Tensor* t) { return planned.count(t->id) != 0; });
  for (int64_t r = 0; r < localReplicas; ++r) {
    const int ipu = static_cast<int>(r) * ipusPerReplica;
    if (ipu >= model.numIpus()) break;
    for (const auto& [id, t] : graph.tensors()) {
      auto shard = shards.find(id);
      if (shard != shards.end() && shard->second.weightStored) {
        // A weight kept as a shard: its shard resides, the whole weight is gathered into a
        // temporary before use (charged with the activations).
        model.add(ipu, device::TensorClass::Weights, id + " (shard)",
                  static_cast<uint64_t>(shard->second.shard) * sizeof(float));
        model.add(ipu, device::TensorClass::Activations, id + " (gathered)",
                  static_cast<uint64_t>(t->info.nbytes()));
      } else if (auto cls = classOf(t->kind)) {
        model.add(ipu, *cls, id, static_cast<uint64_t>(t->info.nbytes()));
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
  }
  return model;
}

}  // namespace xtrain::session
