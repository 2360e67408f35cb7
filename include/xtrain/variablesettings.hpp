// VariableSettings: how a variable (weight) is shared among replicas (docs/replication-semantics.md
// section 4), with PopART's names. Replicas in one group of the shared-variable domain hold one
// value; different groups may hold different values. The retrieval mode says how many values
// weightsToHost returns.
//
// The domain is given as a CommGroup (its groups depend on the replica count R: Orthogonal(k) has
// stride R/k), as (stride, groupSize) (the same groups for every R that they divide), or as a
// ReplicaGrouping (fixed R). Every query that needs the groups takes R and goes through
// getReplicaGrouping(R); the index arithmetic is ReplicaGrouping's.
//
//   query (R replicas, group size k)   All   Consecutive(k)  Orthogonal(k)  Ungrouped
//   getGroupCount(R)                   1     R/k             R/k            R
//   getRealGroupSize(R)                R     k               k              1
//   getStride(R)                       1     1               R/k            1
//   getGroupRepresentative(G)          0     k*G             G              G
//   numReplicasReturningVariable(R)    the group count (OnePerGroup) or R (AllReplicas)
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/names.hpp"            // Shape, TensorId
#include "xtrain/replicagrouping.hpp"  // ReplicaGrouping
#include "xtrain/sessionoptions.hpp"   // CommGroup, CommGroupType

namespace xtrain {

enum class VariableRetrievalMode {
  OnePerGroup = 0,        // one value per group (the group's representative)
  AllReduceReplicas = 1,  // unsupported in PopART; xtrain rejects it wherever a count is needed
  AllReplicas = 2,        // one value per replica
};

class XTRAIN_API VariableSettings {
 public:
  // All replicas share one value (CommGroup All), retrieved OnePerGroup.
  VariableSettings() = default;
  // Throws for Consecutive or Orthogonal with replicaGroupSize 0. AllReduceReplicas is accepted
  // by every constructor (it round-trips through model metadata) but rejected by every query that
  // needs a count of returned values, and by verify().
  explicit VariableSettings(CommGroup sharedVariableDomain, VariableRetrievalMode retrievalMode =
                                                                VariableRetrievalMode::OnePerGroup);
  explicit VariableSettings(VariableRetrievalMode retrievalMode);
  // Groups of groupSize replicas, members stride apart, for any replica count divisible by
  // stride * groupSize. stride and groupSize must be positive; the stride is taken as 1 when
  // groupSize is 1.
  VariableSettings(int64_t stride, int64_t groupSize,
                   VariableRetrievalMode retrievalMode = VariableRetrievalMode::OnePerGroup);
  // The groups of `grouping`; usable only with grouping.getNumReplicas() replicas.
  explicit VariableSettings(
      const ReplicaGrouping& grouping,
      VariableRetrievalMode retrievalMode = VariableRetrievalMode::OnePerGroup);

  // True when built from a CommGroup (or by default). getSharedVariableDomain() throws otherwise
  // (as in PopART); getReplicaGrouping(R).toCommGroup() gives the CommGroup if there is one.
  bool isUsingCommGroup() const { return useCommGroup_; }
  CommGroup getSharedVariableDomain() const;
  // The CommGroup type (All for settings not built from a CommGroup, as in PopART).
  CommGroupType getCommGroupType() const { return sharedVariableDomain_.type; }
  // As given: (stride, groupSize) for stride-based settings; 0 and the CommGroup's
  // replicaGroupSize for CommGroup-based ones.
  int64_t getStride() const { return useCommGroup_ ? 0 : stride_; }
  int64_t getGroupSize() const {
    return useCommGroup_ ? static_cast<int64_t>(sharedVariableDomain_.replicaGroupSize)
                         : groupSize_;
  }
  VariableRetrievalMode getRetrievalMode() const { return retrievalMode_; }

  // The groups over replicaCount replicas. Throws when they do not divide the replicas (e.g.
  // Consecutive(3) over 8 replicas), when replicaCount is not positive, or, for settings built from
  // a ReplicaGrouping, when replicaCount differs from its replica count.
  ReplicaGrouping getReplicaGrouping(int64_t replicaCount) const;
  // Every group's members (PopART's groups()).
  std::vector<std::vector<int64_t>> groups(int64_t replicaCount) const;

  int64_t getGroupCount(int64_t replicaCount) const;
  int64_t getRealGroupSize(int64_t replicaCount) const;
  int64_t getStride(int64_t replicaCount) const;
  // The lowest replica of a group. Needs no replica count (for Orthogonal(k) the group index is
  // its representative); the second form also checks that the group exists over replicaCount.
  int64_t getGroupRepresentative(int64_t group) const;
  int64_t getGroupRepresentative(int64_t group, int64_t replicaCount) const;
  // How many values weightsToHost returns: the group count (OnePerGroup) or replicaCount
  // (AllReplicas). Throws for AllReduceReplicas (unsupported).
  int64_t numReplicasReturningVariable(int64_t replicaCount) const;

  // The shape of the initial value (and of OnePerGroup read / write buffers) on the host:
  // [groupCount] + shape when there is more than one group, else shape.
  //   [2,3,4], R = 4, Consecutive(2) -> [2,2,3,4]
  Shape shapeOnHost(const Shape& shapeOnReplica, int64_t replicaCount) const;
  // The inverse of shapeOnHost: drops the leading group dimension after checking it (throws,
  // naming the tensor and both shapes, when it is missing or differs from the group count).
  Shape shapeOnReplica(const Shape& shapeOnHost, int64_t replicaCount,
                       const TensorId& name = "") const;
  // The shape of the weightsToHost / weightsFromHost buffer:
  // [numReplicasReturningVariable] + shape when that is more than one, else shape.
  //   [2,3,4], R = 4, Consecutive(2): OnePerGroup -> [2,2,3,4], AllReplicas -> [4,2,3,4]
  Shape shapeOnHostForRetrieval(const Shape& shapeOnReplica, int64_t replicaCount) const;

  // Throws xtrain::error unless these settings can be used with replicaCount replicas: the groups
  // divide the replicas and the retrieval mode is supported.
  void verify(int64_t replicaCount) const;

  // "VariableSettings(sharedVariableDomain=CommGroup(type=All, replicaGroupSize=0),
  // retrievalMode=OnePerGroup)", "VariableSettings(stride=4, groupSize=2, retrievalMode=...)".
  std::string str() const;

  bool operator==(const VariableSettings& other) const = default;

 private:
  bool useCommGroup_ = true;
  CommGroup sharedVariableDomain_{};
  int64_t stride_ = 0;
  int64_t groupSize_ = 0;
  int64_t numReplicas_ = 0;  // > 0 when built from a ReplicaGrouping
  VariableRetrievalMode retrievalMode_ = VariableRetrievalMode::OnePerGroup;
};

inline const char* toString(VariableRetrievalMode m) {
  switch (m) {
    case VariableRetrievalMode::OnePerGroup: return "OnePerGroup";
    case VariableRetrievalMode::AllReduceReplicas: return "AllReduceReplicas";
    case VariableRetrievalMode::AllReplicas: return "AllReplicas";
  }
  return "?";
}

XTRAIN_API std::ostream& operator<<(std::ostream& os, VariableRetrievalMode mode);
XTRAIN_API std::ostream& operator<<(std::ostream& os, const VariableSettings& settings);

}  // namespace xtrain
