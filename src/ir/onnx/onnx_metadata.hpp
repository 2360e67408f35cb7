// Model metadata keys xtrain reads and writes in ONNX metadata_props (docs/replication-semantics.md
// section 4), and their value formats. No protobuf here: usable by the session and the checkpoint
// tools.
//
//   __replicationFactor        "4"            Builder::embedReplicationFactor
//   __comm_group_type/<id>     "Consecutive"  CommGroupType name (or its integer value)
//   __comm_group_size/<id>     "2"            CommGroup::replicaGroupSize
//   __variable_settings/<id>   "OnePerGroup"  VariableRetrievalMode name (or its integer value)
//   __replicated_stream_mode/<id> "Broadcast" ReplicatedStreamMode of an input (absent: Replicate)
//   __optimizer_state_of       "Adam(Lamb, Decay)"  the optimizer whose state the model's Accl*___
//   /
//                              Step___ initializers hold (written with them; absent in PopART's
//                              models)
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/inputsettings.hpp"
#include "xtrain/names.hpp"
#include "xtrain/variablesettings.hpp"

namespace xtrain::ir {

inline constexpr const char* kReplicationFactorKey = "__replicationFactor";
inline constexpr const char* kCommGroupTypePrefix = "__comm_group_type/";
inline constexpr const char* kCommGroupSizePrefix = "__comm_group_size/";
inline constexpr const char* kVariableSettingsPrefix = "__variable_settings/";
inline constexpr const char* kReplicatedStreamModePrefix = "__replicated_stream_mode/";
inline constexpr const char* kOptimizerStateOfKey = "__optimizer_state_of";

using ModelMetadata = std::map<std::string, std::string>;

const char* commGroupTypeName(CommGroupType type);

// Writes the three per-tensor keys for `id`.
void writeVariableSettings(ModelMetadata& metadata, const TensorId& id,
                           const VariableSettings& settings);
// The settings recorded for `id`, or nullopt when there are none. Throws xtrain::error naming the
// key when a value is malformed or only some of the keys are present.
std::optional<VariableSettings> readVariableSettings(const ModelMetadata& metadata,
                                                     const TensorId& id);
// Tensor ids that have variable settings recorded.
std::vector<TensorId> tensorsWithVariableSettings(const ModelMetadata& metadata);

// The stream mode recorded for input `id` (Replicate when none is). Throws xtrain::error naming
// the key when the value is neither "Replicate" nor "Broadcast".
ReplicatedStreamMode readReplicatedStreamMode(const ModelMetadata& metadata, const TensorId& id);

// The embedded replication factor, or nullopt. Throws xtrain::error when the value is not a
// positive integer.
std::optional<int64_t> readReplicationFactor(const ModelMetadata& metadata);

}  // namespace xtrain::ir

#pragma GCC visibility pop
