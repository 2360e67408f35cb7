// InputSettings: how the host feeds a model input to the replicas (PopART's names).
//
//   Replicate (default): every replica gets its own micro-batch; the StepIO buffer is
//                        [batchesPerStep, accumulationFactor, localReplicas] + shape.
//   Broadcast:           every replica gets the same micro-batch; the buffer has no replica
//                        dimension: [batchesPerStep, accumulationFactor] + shape (prefix
//                        dimensions equal to 1 dropped, as always).
#pragma once

#include "xtrain/api.hpp"

namespace xtrain {

enum class ReplicatedStreamMode { Replicate = 0, Broadcast };

class XTRAIN_API InputSettings {
 public:
  InputSettings() = default;
  explicit InputSettings(ReplicatedStreamMode mode) : mode_(mode) {}

  ReplicatedStreamMode replicatedStreamMode() const { return mode_; }
  void setReplicatedStreamMode(ReplicatedStreamMode mode) { mode_ = mode; }

 private:
  ReplicatedStreamMode mode_ = ReplicatedStreamMode::Replicate;
};

}  // namespace xtrain
