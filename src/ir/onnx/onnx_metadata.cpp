#include "ir/onnx/onnx_metadata.hpp"

#include <charconv>

#include "xtrain/error.hpp"

namespace xtrain::ir {

namespace {

std::optional<int64_t> parseInt(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty()) return std::nullopt;
  return v;
}

const char* const kGroupTypes[] = {"All", "Consecutive", "Orthogonal", "Ungrouped"};
const char* const kRetrievalModes[] = {"OnePerGroup", "AllReduceReplicas", "AllReplicas"};

// Index of `value` in names (by name or by number), or throws naming the key.
template <size_t N>
int parseEnum(const std::string& key, const std::string& value, const char* const (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (value == names[i]) return static_cast<int>(i);
  }
  if (auto v = parseInt(value); v && *v >= 0 && *v < static_cast<int64_t>(N)) {
    return static_cast<int>(*v);
  }
  std::vector<std::string> expected(std::begin(names), std::end(names));
  throw error("model metadata '{}' has value '{}', expected one of {}", key, value, expected);
}

}  // namespace

const char* commGroupTypeName(CommGroupType type) {
  const auto i = static_cast<size_t>(type);
  return i < std::size(kGroupTypes) ? kGroupTypes[i] : "?";
}

void writeVariableSettings(ModelMetadata& metadata, const TensorId& id,
                           const VariableSettings& settings) {
  const CommGroup& g = settings.getSharedVariableDomain();
  metadata[kCommGroupTypePrefix + id] = commGroupTypeName(g.type);
  metadata[kCommGroupSizePrefix + id] = std::to_string(g.replicaGroupSize);
  metadata[kVariableSettingsPrefix + id] = toString(settings.getRetrievalMode());
}

std::optional<VariableSettings> readVariableSettings(const ModelMetadata& metadata,
                                                     const TensorId& id) {
  const std::string typeKey = kCommGroupTypePrefix + id;
  const std::string sizeKey = kCommGroupSizePrefix + id;
  const std::string modeKey = kVariableSettingsPrefix + id;
  const auto type = metadata.find(typeKey);
  const auto size = metadata.find(sizeKey);
  const auto mode = metadata.find(modeKey);
  const int present =
      (type != metadata.end()) + (size != metadata.end()) + (mode != metadata.end());
  if (present == 0) return std::nullopt;
  if (type == metadata.end() || size == metadata.end()) {
    throw error("model metadata has variable settings for '{}' without both '{}' and '{}'", id,
                typeKey, sizeKey);
  }
  const auto groupType = static_cast<CommGroupType>(parseEnum(typeKey, type->second, kGroupTypes));
  const auto groupSize = parseInt(size->second);
  if (!groupSize || *groupSize < 0) {
    throw error("model metadata '{}' has value '{}', expected a replica group size >= 0", sizeKey,
                size->second);
  }
  VariableRetrievalMode retrieval = VariableRetrievalMode::OnePerGroup;
  if (mode != metadata.end()) {
    retrieval =
        static_cast<VariableRetrievalMode>(parseEnum(modeKey, mode->second, kRetrievalModes));
  }
  return VariableSettings(CommGroup(groupType, static_cast<unsigned>(*groupSize)), retrieval);
}

ReplicatedStreamMode readReplicatedStreamMode(const ModelMetadata& metadata, const TensorId& id) {
  auto it = metadata.find(kReplicatedStreamModePrefix + id);
  if (it == metadata.end() || it->second == "Replicate") return ReplicatedStreamMode::Replicate;
  if (it->second == "Broadcast") return ReplicatedStreamMode::Broadcast;
  throw error("model metadata '{}' has value '{}', expected Replicate or Broadcast", it->first,
              it->second);
}

std::vector<TensorId> tensorsWithVariableSettings(const ModelMetadata& metadata) {
  std::vector<TensorId> ids;
  const std::string prefix = kCommGroupTypePrefix;
  for (const auto& [key, value] : metadata) {
    if (key.compare(0, prefix.size(), prefix) == 0) ids.push_back(key.substr(prefix.size()));
  }
  return ids;
}

std::optional<int64_t> readReplicationFactor(const ModelMetadata& metadata) {
  auto it = metadata.find(kReplicationFactorKey);
  if (it == metadata.end()) return std::nullopt;
  auto v = parseInt(it->second);
  if (!v || *v < 1) {
    throw error("model metadata '{}' has value '{}', expected a positive integer",
                kReplicationFactorKey, it->second);
  }
  return v;
}

}  // namespace xtrain::ir
