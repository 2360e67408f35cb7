// ReplicaGrouping: groups of replicas described by a stride and a group size, with PopART's names
// (docs/replication-semantics.md section 3). This is the one place where xtrain does the group
// index arithmetic; CommGroup, VariableSettings and the communicator splits all go through it.
//
// ReplicaGrouping(N, s, g) over N replicas has N / g groups of g replicas each; the members of a
// group are s apart:
//
//   ReplicaGrouping(8, 2, 2)  ->  {0,2} {1,3} {4,6} {5,7}
//
//   getGroupAt(r)         = r % s + s * (r / (s*g))
//   getReplicaAt(G, i)    = (G / s) * (s*g) + G % s + i*s
//   getIndexInGroupAt(r)  = (r - getReplicaAt(getGroupAt(r))) / s
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/sessionoptions.hpp"  // CommGroup, CommGroupType

namespace xtrain {

// "All", "Consecutive", "Orthogonal", "Ungrouped".
XTRAIN_API const char* toString(CommGroupType type);
// "CommGroup(type=Consecutive, replicaGroupSize=2)".
XTRAIN_API std::string toString(const CommGroup& group);
XTRAIN_API std::ostream& operator<<(std::ostream& os, CommGroupType type);
XTRAIN_API std::ostream& operator<<(std::ostream& os, const CommGroup& group);

class XTRAIN_API ReplicaGrouping {
 public:
  // Requires numReplicas, stride and groupSize > 0 and numReplicas % (stride * groupSize) == 0;
  // throws xtrain::error otherwise. When groupSize == 1 the stride is taken as 1.
  ReplicaGrouping(int64_t numReplicas, int64_t stride, int64_t groupSize);
  // groupSize = numReplicas / stride (PopXL's default): ReplicaGrouping(N) is one group of all N
  // replicas; ReplicaGrouping(8, 2) is {0,2,4,6} {1,3,5,7}.
  explicit ReplicaGrouping(int64_t numReplicas, int64_t stride = 1);

  // A CommGroup over numReplicas replicas (section 3):
  //   All -> (N, 1, N); Consecutive(k) -> (N, 1, k); Orthogonal(k) -> (N, N/k, k);
  //   Ungrouped -> (N, 1, 1).
  // Throws when k does not divide N (or is 0) for Consecutive and Orthogonal.
  static ReplicaGrouping fromCommGroup(const CommGroup& group, int64_t numReplicas);

  // The CommGroup with the same groups, or nullopt when there is none (e.g. (8, 2, 2)). One group
  // of all replicas gives All and groups of one replica give Ungrouped (replicaGroupSize 0 for
  // both); otherwise stride 1 gives Consecutive(g) and stride * g == N gives Orthogonal(g).
  std::optional<CommGroup> toCommGroup() const;

  int64_t getNumReplicas() const { return numReplicas_; }
  int64_t getStride() const { return stride_; }
  int64_t getGroupSize() const { return groupSize_; }
  int64_t getNumGroups() const { return numReplicas_ / groupSize_; }

  // The group of a replica; throws when replica is not in [0, numReplicas).
  int64_t getGroupAt(int64_t replica) const;
  // The position of a replica in its group, in [0, groupSize).
  int64_t getIndexInGroupAt(int64_t replica) const;
  // The index-th member of a group (the lowest replica of the group by default); throws when group
  // is not in [0, numGroups) or index not in [0, groupSize).
  int64_t getReplicaAt(int64_t group, int64_t index = 0) const;
  // The members of a group, in increasing order.
  std::vector<int64_t> getReplicasAt(int64_t group) const;
  // Every group's members: getGroups()[G] == getReplicasAt(G).
  std::vector<std::vector<int64_t>> getGroups() const;

  // The grouping whose group index of a replica is that replica's index in its group here: two
  // replicas sharing a group here never share one in the transpose, so the transpose is also the
  // complement (Consecutive(k) <-> Orthogonal(N/k), Ungrouped <-> All). Transposing twice gives
  // the same grouping.
  //   stride == 1          -> (N, groupSize, N / groupSize)
  //   stride * groupSize == N -> (N, 1, stride)
  //   otherwise: throws ("... cannot be represented as a ReplicaGrouping"), e.g. (12, 3, 2).
  ReplicaGrouping getTranspose() const;

  // "ReplicaGrouping(numReplicas=8, stride=2, groupSize=2)".
  std::string str() const;

  bool operator==(const ReplicaGrouping& other) const = default;

 private:
  void checkReplica(int64_t replica) const;
  void checkGroup(int64_t group) const;

  int64_t numReplicas_;
  int64_t stride_;
  int64_t groupSize_;
};

XTRAIN_API std::ostream& operator<<(std::ostream& os, const ReplicaGrouping& grouping);

// The CommGroup whose groups are the transpose of `group` over numReplicas replicas:
// Consecutive(k) <-> Orthogonal(N/k), Ungrouped <-> All.
XTRAIN_API CommGroup complementOf(const CommGroup& group, int64_t numReplicas);

}  // namespace xtrain
