// HostState's bookkeeping (host_state.hpp): grouped and sharded weights, the optimizer state that
// follows them, the state initializers and the views' first values.
#include "session/host_state.hpp"

#include <set>

#include "ir/onnx/onnx_metadata.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "session/model_io.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

using replication::tileGroups;

namespace {

// Persistent tensors the host keeps a copy of (weights and optimizer state).
bool isHostVisible(const ir::Tensor& t) {
  return t.kind == ir::TensorKind::Variable || t.kind == ir::TensorKind::OptimizerState ||
         t.kind == ir::TensorKind::Accumulator;
}

}  // namespace

void HostState::collectVariableSettings(const ir::Graph& graph,
                                        const std::map<std::string, std::string>& metadata,
                                        const replication::ReplicaLayout& layout) {
  for (const auto& id : ir::tensorsWithVariableSettings(metadata)) {
    const auto settings = ir::readVariableSettings(metadata, id);
    if (!settings) continue;
    if (!graph.hasTensor(id)) {
      throw error(
          "the model metadata gives VariableSettings for '{}', which is not a tensor of the model",
          id);
    }
    // Validates the groups against the replicas (a clear error when they do not divide them) and
    // refuses the unsupported retrieval mode AllReduceReplicas.
    settings->verify(layout.global);
    variableSettings_.emplace(id, *settings);
    if (settings->getGroupCount(layout.global) == 1) {
      if (settings->getRetrievalMode() == VariableRetrievalMode::AllReplicas && layout.global > 1) {
        allReplicasRetrieval_.emplace(id, layout.global);
      }
      continue;
    }
    const ir::Tensor& t = graph.tensor(id);
    if (t.kind != ir::TensorKind::Variable || !groupedValues_.count(id)) {
      throw error(
          "'{}' has VariableSettings {} but is a {} tensor, not a weight: only weights can be "
          "grouped",
          id, settings->str(), ir::toString(t.kind));
    }
    grouped_.emplace(
        id, replication::GroupedVariable(*settings, layout.global, layout.local, t.info.shape()));
  }
}

void HostState::takeOptimizerStateInitializers(ir::Graph& graph) {
  const auto variables = graph.tensorsOfKind(ir::TensorKind::Variable);
  const std::set<TensorId> names(variables.begin(), variables.end());
  for (const auto& id : variables) {
    for (const char* prefix : kStateInitializerPrefixes) {
      const std::string p(prefix);
      if (id.rfind(p, 0) != 0 || !names.count(id.substr(p.size()))) continue;
      const ir::Tensor& t = graph.tensor(id);
      if (!t.consumers.empty() || !t.value) continue;  // the model uses it: an ordinary weight
      stateInitializers_.emplace(id, *t.value);
      graph.removeTensor(id);
      break;
    }
  }
}

void HostState::planSharding(const SessionOptions& options,
                             const std::vector<std::pair<TensorId, int64_t>>& trained,
                             int64_t globalReplicas) {
  shards_ = replication::planSharding(options, trained, variableSettings_, globalReplicas);
}

void HostState::followUpdates(const ir::OptimizerGraph& updates) {
  for (const auto& u : updates.updates) {
    auto it = grouped_.find(u.weight);
    if (it == grouped_.end()) continue;
    for (const auto& state : ir::stateWithAccumulator(u)) {
      // Adam's step count is a scalar, the same on every replica: it is not grouped.
      if (state.perElement) grouped_.emplace(state.id, it->second);
    }
  }
  for (const auto& u : updates.updates) {
    for (const auto& state : u.state) {
      if (u.shardElements > 0 && state.perElement) shardedState_[state.id] = u.weight;
    }
  }
}

replication::GradientPlan HostState::gradientPlan(const ir::OptimizerGraph& updates) const {
  replication::GradientPlan plan;
  plan.mean = updates.replicaReductionIsMean;
  for (const auto& u : updates.updates) {
    if (!grouped_.count(u.weight) && !shards_.count(u.weight)) plan.plain.push_back(u.reduced);
  }
  for (const auto& u : updates.updates) {
    if (auto it = grouped_.find(u.weight); it != grouped_.end()) {
      plan.grouped.push_back({u.weight, u.reduced, it->second});
    } else if (auto s = shards_.find(u.weight); s != shards_.end()) {
      plan.sharded.push_back(
          {u.weight, u.reduced, u.gradShard, u.weightShard, u.accumulator, s->second});
    }
  }
  return plan;
}

void HostState::createViews(const ir::Graph& graph) {
  for (const auto& [id, t] : graph.tensors()) {
    if (!isHostVisible(*t) || !t->value) continue;
    auto grouped = grouped_.find(id);
    if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
      // The host view of sharded state is whole: the weight's shape in the state's type, every
      // element at the state's uniform initial value (0; 1 for TensorFlow's RMSProp).
      HostTensor whole(TensorInfo(t->info.dataType(), graph.tensor(sharded->second).info.shape()));
      whole.fillZero();
      if (t->value->nelms() > 0 && t->value->getAsDouble(0) != 0.0) {
        whole.fill(t->value->getAsDouble(0));
      }
      views_[id] = std::move(whole);
    } else if (grouped == grouped_.end()) {
      views_[id] = *t->value;
    } else if (auto initial = groupedValues_.find(id); initial != groupedValues_.end()) {
      views_[id] = initial->second;
    } else {
      views_[id] = tileGroups(*t->value, grouped->second.groups());
    }
  }
}

void HostState::applyOptimizerStateInitializers(const ir::OptimizerGraph& updates,
                                                const std::map<std::string, std::string>& metadata,
                                                const Optimizer* optimizer) {
  // The same names mean other things under another mode (Adam's Accl2 is AdaMax's infinity norm).
  if (auto it = metadata.find(ir::kOptimizerStateOfKey);
      !stateInitializers_.empty() && it != metadata.end()) {
    const std::string mine = ir::describeOptimizer(*optimizer);
    if (it->second != mine) {
      throw error(
          "the model's optimizer state initializers were written by optimizer {}, but this "
          "session's is {}: the state would mean something else (remove them to start afresh)",
          it->second, mine);
    }
  }
  std::set<TensorId> used;
  for (const auto& u : updates.updates) {
    for (const auto& state : ir::stateWithAccumulator(u)) {
      const std::string& name = state.initializerName;
      auto it = stateInitializers_.find(name);
      if (it == stateInitializers_.end()) continue;
      HostTensor& host = views_.at(state.id);
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

}  // namespace xtrain::session
