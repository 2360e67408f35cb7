// Communicators for replica groups: the index arithmetic of replication-semantics.md section 3
// (kept minimal and internal; the public ReplicaGrouping lives in the replication module) and a
// helper that splits a parent communicator into the groups of a CommGroup or ReplicaGrouping.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "xtrain/sessionoptions.hpp"  // CommGroup

namespace xtrain::comm {

// ReplicaGrouping(numReplicas N, stride s, groupSize g). Requires N, s, g > 0 and N % (s*g) == 0;
// when g == 1 the stride is taken as 1. Throws xtrain::error otherwise.
class Grouping {
 public:
  Grouping(int64_t numReplicas, int64_t stride, int64_t groupSize);
  // All -> (N, 1, N); Consecutive(k) -> (N, 1, k); Orthogonal(k) -> (N, N/k, k);
  // Ungrouped -> (N, 1, 1).
  static Grouping fromCommGroup(const CommGroup& group, int64_t numReplicas);

  int64_t numReplicas() const { return n_; }
  int64_t stride() const { return s_; }
  int64_t groupSize() const { return g_; }
  int64_t numGroups() const { return n_ / g_; }

  int64_t groupAt(int64_t replica) const;                 // r % s + s * (r / (s*g))
  int64_t replicaAt(int64_t group, int64_t index) const;  // (G / s) * (s*g) + G % s + i*s
  int64_t indexInGroup(int64_t replica) const;            // (r - replicaAt(groupAt(r), 0)) / s
  std::vector<int> members(int64_t group) const;          // replicaAt(group, 0 .. g-1)

  // "ReplicaGrouping(numReplicas=8, stride=2, groupSize=2)".
  std::string str() const;

 private:
  int64_t n_, s_, g_;
};

// This rank's communicator among the replicas of its group.
struct GroupCommunicator {
  std::shared_ptr<Communicator> comm;
  int64_t group = 0;         // groupAt(parent.rank())
  int64_t indexInGroup = 0;  // == comm->rank()
};

// Called by every rank of `parent` (parent.size() == grouping.numReplicas(), else xtrain::error):
// each rank joins the sub-communicator of its own group, named "<name>.<group>". Ranks of different
// groups do not wait for each other.
GroupCommunicator splitByGrouping(Communicator& parent, const Grouping& grouping,
                                  const std::string& name);
GroupCommunicator splitByCommGroup(Communicator& parent, const CommGroup& group,
                                   const std::string& name);

const char* toString(CommGroupType type);

}  // namespace xtrain::comm
