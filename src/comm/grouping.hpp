// Communicators for replica groups: a helper that splits a parent communicator into the groups of
// a CommGroup or ReplicaGrouping (docs/replication-semantics.md section 3). The index arithmetic is
// the public xtrain::ReplicaGrouping's (include/xtrain/replicagrouping.hpp).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "xtrain/replicagrouping.hpp"  // ReplicaGrouping, toString(CommGroupType)
#include "xtrain/sessionoptions.hpp"   // CommGroup

namespace xtrain::comm {

// The comm module's name for the public ReplicaGrouping.
using Grouping = ::xtrain::ReplicaGrouping;

// The members of a group as communicator ranks.
std::vector<int> membersOf(const ReplicaGrouping& grouping, int64_t group);

// This rank's communicator among the replicas of its group.
struct GroupCommunicator {
  std::shared_ptr<Communicator> comm;
  int64_t group = 0;         // grouping.getGroupAt(parent.rank())
  int64_t indexInGroup = 0;  // == comm->rank()
};

// Called by every rank of `parent` (parent.size() == grouping.getNumReplicas(), else
// xtrain::error): each rank joins the sub-communicator of its own group, named "<name>.<group>".
// Ranks of different groups do not wait for each other.
GroupCommunicator splitByGrouping(Communicator& parent, const ReplicaGrouping& grouping,
                                  const std::string& name);
GroupCommunicator splitByCommGroup(Communicator& parent, const CommGroup& group,
                                   const std::string& name);

using ::xtrain::toString;  // toString(CommGroupType)

}  // namespace xtrain::comm

#pragma GCC visibility pop
