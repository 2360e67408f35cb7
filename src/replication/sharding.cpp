#include "replication/sharding.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "common/check.hpp"

namespace xtrain::replication {

namespace {

bool on(const TensorLocationSettings& s) {
  return s.location.replicatedTensorSharding == ReplicatedTensorSharding::On;
}

std::string domainName(const CommGroup& g) {
  switch (g.type) {
    case CommGroupType::All: return "All";
    case CommGroupType::Consecutive: return format("Consecutive({})", g.replicaGroupSize);
    case CommGroupType::Orthogonal: return format("Orthogonal({})", g.replicaGroupSize);
    case CommGroupType::Ungrouped: return "None";
  }
  return "?";
}

ReplicaGrouping domainOf(const char* which, const TensorLocationSettings& s, int64_t replicas) {
  const CommGroup& g = s.location.shardingDomain;
  if (g.type == CommGroupType::Ungrouped) {
    throw error(
        "SessionOptions: {}.location.shardingDomain is None: a domain of one replica cannot "
        "shard anything (use All, Consecutive(k) or Orthogonal(k))",
        which);
  }
  try {
    return ReplicaGrouping::fromCommGroup(g, replicas);
  } catch (const error& e) {
    throw error("SessionOptions: {}.location.shardingDomain {} over {} replicas: {}", which,
                domainName(g), replicas, e.what());
  }
}

}  // namespace

std::map<TensorId, ShardPlan> planSharding(const SessionOptions& options,
                                           const std::vector<std::pair<TensorId, int64_t>>& weights,
                                           const std::map<TensorId, VariableSettings>& settings,
                                           int64_t globalReplicas) {
  const auto& ws = options.weightTensorLocationSettings;
  const auto& os = options.optimizerStateTensorLocationSettings;
  const auto& as = options.accumulatorTensorLocationSettings;
  std::map<TensorId, ShardPlan> plans;
  if (!on(ws) && !on(os) && !on(as)) return plans;
  if (on(as) && options.getAccumulationFactor() > 1) {
    throw error(
        "SessionOptions: replicated tensor sharding of accumulators "
        "(accumulatorTensorLocationSettings) with gradient accumulation is not supported yet; "
        "shard the optimizer state and weights instead");
  }
  std::optional<ReplicaGrouping> weightDomain, stateDomain;
  if (on(ws)) weightDomain = domainOf("weightTensorLocationSettings", ws, globalReplicas);
  if (on(os)) stateDomain = domainOf("optimizerStateTensorLocationSettings", os, globalReplicas);
  if (weightDomain && stateDomain && *weightDomain != *stateDomain) {
    throw error(
        "SessionOptions: weights are sharded over {} but optimizer state over {}; sharding "
        "both over different domains is not supported (give them the same shardingDomain)",
        domainName(ws.location.shardingDomain), domainName(os.location.shardingDomain));
  }
  for (const auto& [id, n] : weights) {
    const bool shardWeight = weightDomain && n >= ws.minElementsForReplicatedTensorSharding;
    const bool shardState = stateDomain && n >= os.minElementsForReplicatedTensorSharding;
    if (!shardWeight && !shardState) continue;
    if (auto it = settings.find(id); it != settings.end()) {
      const VariableSettings& v = it->second;
      if (v.getGroupCount(globalReplicas) == globalReplicas && globalReplicas > 1) {
        throw error(
            "weight '{}' cannot be sharded across replicas: its VariableSettings {} give "
            "every replica its own value (domain None), so no replicas share it; turn "
            "sharding off or raise minElementsForReplicatedTensorSharding above its {} "
            "elements",
            id, v.str(), n);
      }
      if (v.getGroupCount(globalReplicas) > 1) {
        throw error(
            "weight '{}' has VariableSettings {} with {} groups: sharding a grouped weight "
            "is not supported yet; raise minElementsForReplicatedTensorSharding above its {} "
            "elements to keep it whole",
            id, v.str(), v.getGroupCount(globalReplicas), n);
      }
    }
    ShardPlan p{shardWeight ? *weightDomain : *stateDomain, n, 0, shardWeight};
    p.shard = (n + p.shardCount() - 1) / p.shardCount();
    if (p.shardCount() > 1) plans.emplace(id, p);
  }
  return plans;
}

void copyShardOut(const void* whole, int64_t n, int64_t s, int64_t index, void* shard,
                  size_t elementSize) {
  const int64_t begin = std::min(n, index * s);
  const int64_t valid = std::max<int64_t>(std::min(n, begin + s) - begin, 0);
  const auto* from =
      static_cast<const std::byte*>(whole) + begin * static_cast<int64_t>(elementSize);
  auto* to = static_cast<std::byte*>(shard);
  if (valid > 0) std::memcpy(to, from, static_cast<size_t>(valid) * elementSize);
  std::memset(to + valid * static_cast<int64_t>(elementSize), 0,
              static_cast<size_t>(s - valid) * elementSize);
}

void copyShardIn(const void* shard, int64_t n, int64_t s, int64_t index, void* whole,
                 size_t elementSize) {
  const int64_t begin = std::min(n, index * s);
  const int64_t valid = std::min(n, begin + s) - begin;
  auto* to = static_cast<std::byte*>(whole) + begin * static_cast<int64_t>(elementSize);
  if (valid > 0) std::memcpy(to, shard, static_cast<size_t>(valid) * elementSize);
}

}  // namespace xtrain::replication
