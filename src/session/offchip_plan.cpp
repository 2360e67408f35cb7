// planOffChip (offchip_plan.hpp): PopART's location rule, then the transfers around each op.
#include "session/offchip_plan.hpp"

#include <algorithm>

#include "ir/op_registry.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

// The settings of a tensor's kind and their name (for messages), or nullptr for the kinds that
// always stay on chip.
const TensorLocationSettings* settingsOf(const SessionOptions& o, ir::TensorKind kind,
                                         const char** name) {
  switch (kind) {
    case ir::TensorKind::Variable:
      *name = "weightTensorLocationSettings";
      return &o.weightTensorLocationSettings;
    case ir::TensorKind::OptimizerState:
      *name = "optimizerStateTensorLocationSettings";
      return &o.optimizerStateTensorLocationSettings;
    case ir::TensorKind::Accumulator:
      *name = "accumulatorTensorLocationSettings";
      return &o.accumulatorTensorLocationSettings;
    default: *name = "activationTensorLocationSettings"; return nullptr;
  }
}

const char* storageName(TensorStorage s) {
  return s == TensorStorage::OffChip ? "OffChip" : "OnChip";
}

const char* shardingName(ReplicatedTensorSharding s) {
  return s == ReplicatedTensorSharding::On ? "On" : "Off";
}

// Whether `t` goes off chip, by its override or its kind's settings.
bool decideOffChip(const ir::Tensor& t, const SessionOptions& o) {
  const char* kindSettings = nullptr;
  const TensorLocationSettings* settings = settingsOf(o, t.kind, &kindSettings);
  auto override = o.tensorLocationSettingsOverride.find(t.id);
  if (override != o.tensorLocationSettingsOverride.end()) {
    const TensorLocation& loc = override->second;
    if (settings == nullptr) {
      if (loc.storage == TensorStorage::OffChip) {
        throw error(
            "SessionOptions: tensorLocationSettingsOverride puts '{}' OffChip, but it is {} "
            "(not a weight, optimizer state or accumulator): xtrain keeps activations, inputs and "
            "constants on chip (PopART needs execution phases for off-chip activations)",
            t.id, ir::toString(t.kind));
      }
      return false;
    }
    if (loc.replicatedTensorSharding != settings->location.replicatedTensorSharding) {
      throw error(
          "SessionOptions: tensorLocationSettingsOverride of '{}' has replicatedTensorSharding {} "
          "but its kind's {} has {}: xtrain shards tensors by kind (and "
          "minElementsForReplicatedTensorSharding), so an override may change the storage only",
          t.id, shardingName(loc.replicatedTensorSharding), kindSettings,
          shardingName(settings->location.replicatedTensorSharding));
    }
    return loc.storage == TensorStorage::OffChip;
  }
  // PopART's minimum: a tensor with fewer elements stays on chip (the remote transfer of a few
  // elements costs more than it saves).
  return settings != nullptr && settings->location.storage == TensorStorage::OffChip &&
         t.info.nelms() >= settings->minElementsForOffChip;
}

// The bytes streaming memory keeps of `t` for one replica: a weight kept as a shard keeps its
// shard (its optimizer state already has the shard's shape in the graph).
uint64_t storedBytes(const ir::Tensor& t,
                     const std::map<TensorId, replication::ShardPlan>& shards) {
  const auto bytes = static_cast<uint64_t>(t.info.nbytes());
  auto shard = shards.find(t.id);
  if (shard == shards.end() || !shard->second.weightStored || t.info.nelms() == 0) return bytes;
  const uint64_t elementSize = bytes / static_cast<uint64_t>(t.info.nelms());
  return static_cast<uint64_t>(shard->second.shard) * elementSize;
}

}  // namespace

void checkOffChipOptions(const SessionOptions& options) {
  if (options.activationTensorLocationSettings.location.storage == TensorStorage::OffChip) {
    throw error(
        "SessionOptions: activationTensorLocationSettings.location.storage is OffChip: off-chip "
        "activations need execution phases (virtualGraphMode ExecutionPhases), which xtrain does "
        "not support; keep activations OnChip (weights, optimizer state and accumulators may go "
        "OffChip)");
  }
}

OffChipPlan planOffChip(const ir::Graph& graph, const SessionOptions& options,
                        const std::map<TensorId, replication::ShardPlan>& shards) {
  for (const auto& [id, loc] : options.tensorLocationSettingsOverride) {
    if (graph.hasTensor(id)) continue;
    // The state of a weight this session has, which its optimizer does not keep (an inference
    // session, SGD without momentum): PopART programs share one SessionOptions between their
    // training and inference sessions, so this is no mistake; the override has nothing to move.
    const size_t sep = id.find("___");
    if (sep != std::string::npos && graph.hasTensor(id.substr(sep + 3)) &&
        graph.tensor(id.substr(sep + 3)).kind == ir::TensorKind::Variable) {
      logging::session::info(
          "SessionOptions: tensorLocationSettingsOverride names '{}', optimizer state or an "
          "accumulator this session does not have: no effect",
          id);
      continue;
    }
    throw error(
        "SessionOptions: tensorLocationSettingsOverride names '{}' ({}), which is not a tensor "
        "of the session (weights by their model names, optimizer state as Accl___<weight>, "
        "Accl1___<weight>, ..., accumulators as Accum___<weight>)",
        id, storageName(loc.storage));
  }
  OffChipPlan plan;
  // Per kind with OffChip settings: its tensors, and how many went off chip, to say when the
  // minimum left every one on chip (PopART says nothing; a user asking for off-chip storage wants
  // to know it did not happen).
  std::map<ir::TensorKind, std::pair<int, int>> kinds;
  for (const auto& [id, t] : graph.tensors()) {
    const bool off = decideOffChip(*t, options);
    if (off) plan.streamingBytes[id] = storedBytes(*t, shards);
    const char* name = nullptr;
    const TensorLocationSettings* s = settingsOf(options, t->kind, &name);
    if (s != nullptr && s->location.storage == TensorStorage::OffChip) {
      ++kinds[t->kind].first;
      kinds[t->kind].second += off ? 1 : 0;
    }
  }
  for (const auto& [kind, counts] : kinds) {
    if (counts.second > 0) continue;
    const char* name = nullptr;
    const TensorLocationSettings* s = settingsOf(options, kind, &name);
    logging::session::warn(
        "SessionOptions: {} asks for OffChip storage, but none of its {} tensors has "
        "minElementsForOffChip = {} elements or more (or an override keeps it on chip): they all "
        "stay on chip",
        name, counts.first, s->minElementsForOffChip);
  }
  if (plan.empty()) return plan;
  uint64_t bytes = 0;
  for (const auto& [id, b] : plan.streamingBytes) bytes += b;
  logging::session::info("off-chip storage: {} tensors, {} bytes per replica in streaming memory",
                         plan.streamingBytes.size(), bytes);
  for (OpId opId : graph.schedule()) {
    const ir::Op& op = graph.op(opId);
    const ir::OpDef* def = ir::OpRegistry::instance().find(op.domain, op.type);
    std::vector<RemoteTransfer> loads, stores;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      auto off = plan.streamingBytes.find(op.inputs[i]);
      if (off == plan.streamingBytes.end()) continue;
      loads.push_back({off->first, off->second, false});
      const bool written =
          def != nullptr && std::find(def->modifiesInputs.begin(), def->modifiesInputs.end(),
                                      static_cast<int>(i)) != def->modifiesInputs.end();
      if (written) stores.push_back({off->first, off->second, true});
    }
    for (const auto& out : op.outputs) {
      auto off = plan.streamingBytes.find(out);
      if (off != plan.streamingBytes.end()) stores.push_back({off->first, off->second, true});
    }
    if (loads.empty() && stores.empty()) continue;
    loads.insert(loads.end(), stores.begin(), stores.end());
    plan.transfers.emplace(opId, std::move(loads));
  }
  return plan;
}

}  // namespace xtrain::session
