#include "comm/grouping.hpp"

#include "xtrain/error.hpp"

namespace xtrain::comm {

std::vector<int> membersOf(const ReplicaGrouping& grouping, int64_t group) {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(grouping.getGroupSize()));
  for (int64_t r : grouping.getReplicasAt(group)) out.push_back(static_cast<int>(r));
  return out;
}

GroupCommunicator splitByGrouping(Communicator& parent, const ReplicaGrouping& grouping,
                                  const std::string& name) {
  if (parent.size() != grouping.getNumReplicas()) {
    throw error("{} cannot split group '{}' of {} ranks: the grouping is for {} replicas",
                grouping.str(), parent.name(), parent.size(), grouping.getNumReplicas());
  }
  GroupCommunicator out;
  out.group = grouping.getGroupAt(parent.rank());
  out.indexInGroup = grouping.getIndexInGroupAt(parent.rank());
  out.comm = parent.split(membersOf(grouping, out.group), name + "." + std::to_string(out.group));
  return out;
}

GroupCommunicator splitByCommGroup(Communicator& parent, const CommGroup& group,
                                   const std::string& name) {
  return splitByGrouping(parent, ReplicaGrouping::fromCommGroup(group, parent.size()), name);
}

}  // namespace xtrain::comm
