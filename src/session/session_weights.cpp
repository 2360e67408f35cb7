// The host's copies of weights and optimizer state: to and from the replicas, the user's buffers,
// ONNX files and the optimizer's hyperparameters.
#include <cstring>

#include "comm/communicator.hpp"
#include "ir/onnx/onnx_metadata.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "session/model_io.hpp"
#include "session/session_impl.hpp"
#include "session/step_buffers.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

using replication::copyShardOut;
using replication::groupBytes;
using replication::ShardPlan;

void SessionImpl::weightsFromHost() {
  requireAttached("weightsFromHost");
  for (int64_t r = 0; r < localReplicas_; ++r) {
    for (const auto& [id, value] : hostWeights_) {
      HostTensor& b = replicaBuffer(r, id);
      auto grouped = grouped_.find(id);
      if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
        const ShardPlan& plan = shards_.at(sharded->second);
        copyShardOut(value.raw(), plan.elements, plan.shard, plan.shardOf(replicaOffset_ + r),
                     b.raw(), dataTypeSize(b.dataType()));
      } else if (grouped == grouped_.end()) {
        std::memcpy(b.raw(), value.raw(), value.nbytes());
      } else {
        const int64_t group = grouped->second.grouping.getGroupAt(replicaOffset_ + r);
        std::memcpy(b.raw(), groupBytes(value, group), b.nbytes());
      }
    }
  }
}

void SessionImpl::weightsToHost() {
  requireAttached("weightsToHost");
  for (auto& [id, value] : hostWeights_) {
    const HostTensor& whole = wholeHostValue(id);
    if (&whole != &value) std::memcpy(value.raw(), whole.raw(), value.nbytes());
  }
}

HostTensor& SessionImpl::wholeHostValue(const TensorId& id) {
  HostTensor& host = hostWeights_.at(id);
  if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
    exchange_->gatherShards(shards_.at(sharded->second), id, host.raw());
  } else if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
    exchange_->groupedToHost(id, grouped->second, host);
  } else {
    return replicaBuffer(0, id);
  }
  return host;
}

void SessionImpl::broadcastWeights(int rootRank) {
  requireAttached("broadcastWeights");
  const int instances = exchange_->instanceCount();
  if (rootRank < 0 || rootRank >= instances) {
    throw error(
        "broadcastWeights: rootRank {} is out of range: the job has {} instance{} (ranks 0..{})",
        rootRank, instances, instances == 1 ? "" : "s", instances - 1);
  }
  for (const auto& [id, host] : hostWeights_) {
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      exchange_->broadcastGrouped(id, grouped->second, rootRank);
    } else if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
      exchange_->broadcastSharded(id, shards_.at(sharded->second), rootRank);
    } else {
      exchange_->broadcastPlain(id, rootRank);
    }
  }
}

void SessionImpl::readWeights(const WeightsIO& weights) {
  requirePrepared("readWeights");
  for (const auto& [id, buf] : weights.all()) {
    auto it = hostWeights_.find(id);
    if (it == hostWeights_.end()) {
      throw error("readWeights: '{}' is not a weight or optimizer state of the session", id);
    }
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      const HostTensor out = toRetrieval(grouped->second, it->second);
      checkHostBuffer("readWeights", id, out.info(), buf.info);
      std::memcpy(buf.data, out.raw(), out.nbytes());
      continue;
    }
    checkHostBuffer("readWeights", id, it->second.info(), buf.info);
    std::memcpy(buf.data, it->second.raw(), it->second.nbytes());
  }
}

void SessionImpl::writeWeights(const WeightsIO& weights) {
  requirePrepared("writeWeights");
  for (const auto& [id, buf] : weights.all()) {
    auto it = hostWeights_.find(id);
    if (it == hostWeights_.end()) {
      throw error("writeWeights: '{}' is not a weight or optimizer state of the session", id);
    }
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      HostTensor given(TensorInfo(it->second.dataType(), grouped->second.retrievalShape()));
      checkHostBuffer("writeWeights", id, given.info(), buf.info);
      std::memcpy(given.raw(), buf.data, given.nbytes());
      it->second = fromRetrieval(grouped->second, given);
      continue;
    }
    checkHostBuffer("writeWeights", id, it->second.info(), buf.info);
    std::memcpy(it->second.raw(), buf.data, it->second.nbytes());
  }
}

void SessionImpl::modelToHost(const std::string& path, bool withOptimizerState) {
  requireAttached("modelToHost");
  if (withOptimizerState && !config_.training) {
    throw error("modelToHost: an inference session has no optimizer state to write");
  }
  weightsToHost();
  std::map<TensorId, HostTensor> values, extra;
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    values.emplace(id, hostWeights_.at(id));
  }
  // State initializers the model came with are always brought up to date; others are added when
  // asked for.
  for (const auto& u : optimizerGraph_.updates) {
    for (const auto& state : ir::stateWithAccumulator(u)) {
      const std::string& name = state.initializerName;
      if (stateInitializers_.count(name)) {
        values.emplace(name, hostWeights_.at(state.id));
      } else if (withOptimizerState) {
        extra.emplace(name, hostWeights_.at(state.id));
      }
    }
  }
  // The optimizer whose state the initializers hold, so a session of another mode refuses them.
  std::map<std::string, std::string> metadata;
  if (!extra.empty() || !stateInitializers_.empty()) {
    metadata[ir::kOptimizerStateOfKey] = ir::describeOptimizer(*config_.optimizer);
  }
  // Every instance holds the complete values; one file is written.
  if (instances_ && instances_->rank() != 0) return;
  writeModelWithWeights(modelBytes_, values, path, extra, metadata);
}

void SessionImpl::takeOptimizerStateInitializers() {
  const auto variables = graph_->tensorsOfKind(ir::TensorKind::Variable);
  const std::set<TensorId> names(variables.begin(), variables.end());
  for (const auto& id : variables) {
    for (const char* prefix : kStateInitializerPrefixes) {
      const std::string p(prefix);
      if (id.rfind(p, 0) != 0 || !names.count(id.substr(p.size()))) continue;
      const ir::Tensor& t = graph_->tensor(id);
      if (!t.consumers.empty() || !t.value) continue;  // the model uses it: an ordinary weight
      stateInitializers_.emplace(id, *t.value);
      graph_->removeTensor(id);
      break;
    }
  }
}

void SessionImpl::applyOptimizerStateInitializers() {
  // The same names mean other things under another mode (Adam's Accl2 is AdaMax's infinity norm).
  if (auto it = modelMetadata_.find(ir::kOptimizerStateOfKey);
      !stateInitializers_.empty() && it != modelMetadata_.end()) {
    const std::string mine = ir::describeOptimizer(*config_.optimizer);
    if (it->second != mine) {
      throw error(
          "the model's optimizer state initializers were written by optimizer {}, but this "
          "session's is {}: the state would mean something else (remove them to start afresh)",
          it->second, mine);
    }
  }
  std::set<TensorId> used;
  for (const auto& u : optimizerGraph_.updates) {
    for (const auto& state : ir::stateWithAccumulator(u)) {
      const std::string& name = state.initializerName;
      auto it = stateInitializers_.find(name);
      if (it == stateInitializers_.end()) continue;
      HostTensor& host = hostWeights_.at(state.id);
      if (it->second.info() != host.info()) {
        throw error(
            "the model's initializer '{}' is {} but the optimizer state it initialises is {}", name,
            it->second.info().toString(), host.info().toString());
      }
      host = it->second;
      used.insert(name);
    }
  }
  for (const auto& [name, value] : stateInitializers_) {
    if (!used.count(name)) {
      logging::session::warn(
          "the model's optimizer state initializer '{}' is ignored: the session's optimizer keeps "
          "no "
          "such state",
          name);
    }
  }
}

void SessionImpl::resetHostWeights(const std::string& model, bool ignoreMissing) {
  requirePrepared("resetHostWeights");
  std::map<TensorId, HostTensor> values = readInitializers(model);
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    auto it = values.find(id);
    if (it == values.end()) {
      if (ignoreMissing) continue;
      throw error("resetHostWeights: the model has no initializer for weight '{}'", id);
    }
    HostTensor& host = hostWeights_.at(id);
    if (it->second.info() != host.info()) {
      throw error("resetHostWeights: weight '{}' is {} in the model but {} in the session", id,
                  it->second.info().toString(), host.info().toString());
    }
    host = it->second;
  }
}

void SessionImpl::updateOptimizerFromHost(const Optimizer& next) {
  XT_CHECK(config_.training, "updateOptimizerFromHost on an inference session");
  // Before prepareDevice the values only go into the graph; after it, to the device too.
  if (prepared_) requireAttached("updateOptimizerFromHost");
  std::vector<TensorId> weights;
  for (const auto& u : optimizerGraph_.updates) weights.push_back(u.weight);
  ir::checkOptimizerUpdate(*config_.optimizer, next, weights);
  const float previousLossScaling = config_.optimizer->getLossScalingVal();
  config_.optimizer = next.clone();
  updateControl_.optimizerChanged(previousLossScaling);
}

}  // namespace xtrain::session
