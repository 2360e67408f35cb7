// HostState's moves (host_state.hpp): the views to and from the replicas, the user's buffers,
// ONNX files and checkpoints.
//
// A checkpoint's datasets are the complete host views (fromReplicas makes them whole on every
// instance: grouped weights with their [groups] dimension, sharded state gathered and unpadded),
// so a checkpoint does not depend on the layout that wrote it, and loading into another layout is
// toReplicas of the same views.
#include <cstring>
#include <set>

#include "ir/optimizers/update_rules.hpp"
#include "session/host_state.hpp"
#include "session/model_io.hpp"
#include "session/step_buffers.hpp"

namespace xtrain::session {

using replication::copyShardOut;
using replication::groupBytes;
using replication::ShardPlan;

void HostState::toReplicas(replication::LocalReplicas& replicas,
                           const replication::ReplicaLayout& layout) {
  for (int64_t r = 0; r < layout.local; ++r) {
    for (const auto& [id, value] : views_) {
      HostTensor& b = replicas.buffer(r, id);
      auto grouped = grouped_.find(id);
      if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
        const ShardPlan& plan = shards_.at(sharded->second);
        copyShardOut(value.raw(), plan.elements, plan.shard, plan.shardOf(layout.offset + r),
                     b.raw(), dataTypeSize(b.dataType()));
      } else if (grouped == grouped_.end()) {
        std::memcpy(b.raw(), value.raw(), value.nbytes());
      } else {
        const int64_t group = grouped->second.grouping.getGroupAt(layout.offset + r);
        std::memcpy(b.raw(), groupBytes(value, group), b.nbytes());
      }
    }
  }
}

void HostState::fromReplicas(replication::ReplicaExchange& exchange,
                             replication::LocalReplicas& replicas) {
  for (auto& [id, value] : views_) {
    const HostTensor& whole = this->whole(id, exchange, replicas);
    if (&whole != &value) std::memcpy(value.raw(), whole.raw(), value.nbytes());
  }
}

HostTensor& HostState::whole(const TensorId& id, replication::ReplicaExchange& exchange,
                             replication::LocalReplicas& replicas) {
  HostTensor& host = views_.at(id);
  if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
    exchange.gatherShards(shards_.at(sharded->second), id, host.raw());
  } else if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
    exchange.groupedToHost(id, grouped->second, host);
  } else {
    return replicas.buffer(0, id);
  }
  return host;
}

void HostState::broadcast(replication::ReplicaExchange& exchange, int rootRank) {
  const int instances = exchange.instanceCount();
  if (rootRank < 0 || rootRank >= instances) {
    throw error(
        "broadcastWeights: rootRank {} is out of range: the job has {} instance{} (ranks 0..{})",
        rootRank, instances, instances == 1 ? "" : "s", instances - 1);
  }
  for (const auto& [id, host] : views_) {
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      exchange.broadcastGrouped(id, grouped->second, rootRank);
    } else if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
      exchange.broadcastSharded(id, shards_.at(sharded->second), rootRank);
    } else {
      exchange.broadcastPlain(id, rootRank);
    }
  }
}

void HostState::readWeights(const WeightsIO& weights) const {
  for (const auto& [id, buf] : weights.all()) {
    auto it = views_.find(id);
    if (it == views_.end()) {
      throw error("readWeights: '{}' is not a weight or optimizer state of the session", id);
    }
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      const HostTensor out = toRetrieval(grouped->second, it->second);
      checkHostBuffer("readWeights", id, out.info(), buf.info);
      std::memcpy(buf.data, out.raw(), out.nbytes());
      continue;
    }
    if (auto all = allReplicasRetrieval_.find(id); all != allReplicasRetrieval_.end()) {
      const HostTensor out = replication::tileGroups(it->second, all->second);
      checkHostBuffer("readWeights", id, out.info(), buf.info);
      std::memcpy(buf.data, out.raw(), out.nbytes());
      continue;
    }
    checkHostBuffer("readWeights", id, it->second.info(), buf.info);
    std::memcpy(buf.data, it->second.raw(), it->second.nbytes());
  }
}

void HostState::writeWeights(const WeightsIO& weights) {
  for (const auto& [id, buf] : weights.all()) {
    auto it = views_.find(id);
    if (it == views_.end()) {
      throw error("writeWeights: '{}' is not a weight or optimizer state of the session", id);
    }
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      HostTensor given(TensorInfo(it->second.dataType(), grouped->second.retrievalShape()));
      checkHostBuffer("writeWeights", id, given.info(), buf.info);
      std::memcpy(given.raw(), buf.data, given.nbytes());
      it->second = fromRetrieval(grouped->second, given);
      continue;
    }
    if (auto all = allReplicasRetrieval_.find(id); all != allReplicasRetrieval_.end()) {
      // One copy per replica, of one weight: the first replica's (the group's representative, as
      // PopART writes it) is the value.
      Shape copies{all->second};
      copies.insert(copies.end(), it->second.shape().begin(), it->second.shape().end());
      checkHostBuffer("writeWeights", id, TensorInfo(it->second.dataType(), copies), buf.info);
      std::memcpy(it->second.raw(), buf.data, it->second.nbytes());
      continue;
    }
    checkHostBuffer("writeWeights", id, it->second.info(), buf.info);
    std::memcpy(it->second.raw(), buf.data, it->second.nbytes());
  }
}

void HostState::resetFromModel(const ir::Graph& graph, const std::string& model,
                               bool ignoreMissing) {
  std::map<TensorId, HostTensor> values = readInitializers(model);
  for (const auto& id : graph.tensorsOfKind(ir::TensorKind::Variable)) {
    auto it = values.find(id);
    if (it == values.end()) {
      if (ignoreMissing) continue;
      throw error("resetHostWeights: the model has no initializer for weight '{}'", id);
    }
    HostTensor& host = views_.at(id);
    if (it->second.info() != host.info()) {
      throw error("resetHostWeights: weight '{}' is {} in the model but {} in the session", id,
                  it->second.info().toString(), host.info().toString());
    }
    host = it->second;
  }
}

std::map<TensorId, HostTensor> HostState::modelValues(const ir::Graph& graph,
                                                      const ir::OptimizerGraph& updates,
                                                      bool withOptimizerState,
                                                      std::map<TensorId, HostTensor>& extra) const {
  std::map<TensorId, HostTensor> values;
  for (const auto& id : graph.tensorsOfKind(ir::TensorKind::Variable)) {
    values.emplace(id, views_.at(id));
  }
  // State initializers the model came with are always brought up to date; others are added when
  // asked for, except the gradient accumulator: it is zero between steps, and PopART does not
  // write it either.
  for (const auto& u : updates.updates) {
    for (const auto& state : ir::stateWithAccumulator(u)) {
      const std::string& name = state.initializerName;
      if (stateInitializers_.count(name)) {
        values.emplace(name, views_.at(state.id));
      } else if (withOptimizerState && state.id != u.accumulator) {
        extra.emplace(name, views_.at(state.id));
      }
    }
  }
  return values;
}

std::vector<std::pair<TensorId, std::string>> HostState::checkpointTensors(
    const ir::Graph& graph, const ir::OptimizerGraph& updates) {
  std::vector<std::pair<TensorId, std::string>> out;
  for (const auto& id : graph.tensorsOfKind(ir::TensorKind::Variable)) {
    out.emplace_back(id, "/weights/" + checkpoint::encodeName(id));
  }
  for (const auto& u : updates.updates) {
    const std::string prefix = "/optimizer/" + checkpoint::encodeName(u.weight) + "/";
    for (const auto& state : ir::stateWithAccumulator(u)) {
      out.emplace_back(state.id, prefix + state.slot);
    }
  }
  return out;
}

void HostState::checkCheckpointTensors(
    const std::string& path, const checkpoint::Contents& c,
    const std::vector<std::pair<TensorId, std::string>>& tensors) const {
  std::set<std::string> expected;
  for (const auto& [id, dataset] : tensors) {
    expected.insert(dataset);
    const HostTensor& host = views_.at(id);
    auto it = c.datasets.find(dataset);
    const bool isAccumulator =
        dataset.size() > 12 && dataset.rfind("/accumulator") == dataset.size() - 12;
    if (it == c.datasets.end()) {
      if (isAccumulator)
        continue;  // zero between steps; a checkpoint without accumulation has none
      throw error("checkpoint '{}' has no {} (this session's '{}', {}){}", path, dataset, id,
                  host.info().toString(),
                  dataset.rfind("/optimizer/", 0) == 0
                      ? ": was it written with another optimizer (e.g. without momentum)?"
                      : "");
    }
    if (it->second.info() != host.info()) {
      throw error("checkpoint '{}': {} is {} but this session's '{}' is {}", path, dataset,
                  it->second.info().toString(), id, host.info().toString());
    }
  }
  for (const auto& [dataset, value] : c.datasets) {
    if (dataset.rfind("/state/", 0) == 0 || expected.count(dataset)) continue;
    if (dataset.size() > 12 && dataset.rfind("/accumulator") == dataset.size() - 12) continue;
    throw error("checkpoint '{}' has {} ({}), which this session does not have{}", path, dataset,
                value.info().toString(),
                dataset.rfind("/optimizer/", 0) == 0
                    ? " (was it written with another optimizer, e.g. with momentum?)"
                    : "");
  }
}

void HostState::installCheckpointTensors(
    checkpoint::Contents& c, const std::vector<std::pair<TensorId, std::string>>& tensors) {
  for (const auto& [id, dataset] : tensors) {
    auto it = c.datasets.find(dataset);
    if (it != c.datasets.end()) {
      views_.at(id) = std::move(it->second);
    } else {
      views_.at(id).fillZero();
    }
  }
}

}  // namespace xtrain::session
