// SessionOptions: PopART's session options that xtrain honours, with PopART's names and defaults.
// Every option here is either honoured or rejected at session creation with an error saying it is
// not supported yet; none is silently ignored. See docs/session-options.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain {

enum class CommGroupType { All = 0, Consecutive, Orthogonal, Ungrouped };

// A group of replicas (docs/replication-semantics.md section 3). replicaGroupSize is ignored for
// All and Ungrouped.
struct XTRAIN_API CommGroup {
  CommGroup() = default;
  CommGroup(CommGroupType t, unsigned size) : type(t), replicaGroupSize(size) {}
  CommGroupType type = CommGroupType::All;
  unsigned replicaGroupSize = 0;
  bool operator==(const CommGroup&) const = default;
};

// Automatic loss scaling (docs/optimizers.md section 6.2). xtrain's rule is dynamic loss scaling:
// after each step's gradient reduction, when any gradient element of any replica is inf or nan, the
// step is skipped (weights and optimizer state unchanged, accumulators cleared) and the scale S is
// multiplied by backoffFactor; after growthInterval finite steps in a row it is multiplied by
// growthFactor, up to 2^15 when the model has FLOAT16 weights or loss, else the largest float. S
// starts at the optimizer's lossScaling, which must be non-constant. PopART's histogram settings
// (toTrackTensors, binEdgeLocation, thresholdUpperCountProportion, updatePeriod) are accepted so
// PopART code compiles, and have no effect (a warning says so).
struct XTRAIN_API AutomaticLossScalingSettings {
  bool enabled = false;
  std::vector<std::string> toTrackTensors;
  float binEdgeLocation = 0.0625f;
  float thresholdUpperCountProportion = 1e-7f;
  int updatePeriod = 1;
  // xtrain's dynamic rule.
  int64_t growthInterval = 2000;
  float growthFactor = 2.0f;
  float backoffFactor = 0.5f;
};

enum class TensorStorage { OnChip = 0, OffChip };
enum class ReplicatedTensorSharding { Off = 0, On };

struct XTRAIN_API TensorLocation {
  TensorStorage storage = TensorStorage::OnChip;
  ReplicatedTensorSharding replicatedTensorSharding = ReplicatedTensorSharding::Off;
  CommGroup shardingDomain;
};

struct XTRAIN_API TensorLocationSettings {
  TensorLocation location;
  int minElementsForOffChip = 2;
  int minElementsForReplicatedTensorSharding = 8192;
};

// Where inputs come from when no host data is given (benchmarks).
enum class SyntheticDataMode { Off = 0, Zeros, RandomUniform, RandomNormal };

enum class VirtualGraphMode { Off = 0, Manual, Auto, ExecutionPhases };

struct XTRAIN_API SessionOptions {
  // Replication (docs/replication-semantics.md section 1).
  bool enableReplicatedGraphs = false;
  int64_t replicatedGraphCount = 1;
  bool enableDistributedReplicatedGraphs = false;
  int64_t globalReplicationFactor = 1;
  int64_t globalReplicaOffset = 0;

  // Gradient accumulation and the reduction of accumulated / replicated gradients (section 2).
  bool enableGradientAccumulation = false;
  int64_t accumulationFactor = 1;
  ReductionType accumulationAndReplicationReductionType = ReductionType::Sum;
  MeanReductionStrategy meanAccumulationAndReplicationReductionStrategy =
      MeanReductionStrategy::Post;

  // Tensor locations and replicated tensor sharding (section 5).
  TensorLocationSettings activationTensorLocationSettings;
  TensorLocationSettings weightTensorLocationSettings;
  TensorLocationSettings optimizerStateTensorLocationSettings;
  TensorLocationSettings accumulatorTensorLocationSettings;

  SyntheticDataMode syntheticDataMode = SyntheticDataMode::Off;
  // Where the session writes its reports (memory report); empty: nowhere.
  std::string logDir;

  // FLOAT16 weights and optimizer state are rounded stochastically when the optimizer stores them
  // (docs/optimizers.md section 7): the same on every replica, reproducible from the session's
  // seed.
  bool enableStochasticRounding = false;
  AutomaticLossScalingSettings automaticLossScalingSettings;
  bool enablePipelining = false;
  VirtualGraphMode virtualGraphMode = VirtualGraphMode::Off;
  bool enableOutlining = true;  // accepted, no effect on a simulated device (documented)

  // Options of the (simulated) engine, Poplar's names: "autoReport.all", "autoReport.directory", ...
  // and xtrain's "trace.file", "trace.steps". An unknown key is an error at session creation that
  // names it and lists the known ones (src/session/engine_options.hpp, docs/session-options.md).
  std::map<std::string, std::string> engineOptions;
  // Options of the reports getSummaryReport() / getReport() write; unknown keys are an error too.
  std::map<std::string, std::string> reportOptions;
  // Counts the simulated clock's cycles of each run() (TrainingSession::getCycleCount()).
  bool instrumentWithHardwareCycleCounter = false;

  // Local replicas (L) of this instance: replicatedGraphCount when replication is on, else 1.
  int64_t getLocalReplicationFactor() const {
    return enableReplicatedGraphs ? replicatedGraphCount : 1;
  }
  // G: globalReplicationFactor when distributed, else L (section 1).
  int64_t getGlobalReplicationFactor() const {
    return enableDistributedReplicatedGraphs ? globalReplicationFactor
                                             : getLocalReplicationFactor();
  }
  int64_t getAccumulationFactor() const {
    return enableGradientAccumulation ? accumulationFactor : 1;
  }
};

}  // namespace xtrain
