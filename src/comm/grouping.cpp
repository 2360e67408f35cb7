#include "comm/grouping.hpp"

namespace xtrain::comm {

const char* toString(CommGroupType type) {
  switch (type) {
    case CommGroupType::All: return "All";
    case CommGroupType::Consecutive: return "Consecutive";
    case CommGroupType::Orthogonal: return "Orthogonal";
    case CommGroupType::Ungrouped: return "Ungrouped";
  }
  return "?";
}

Grouping::Grouping(int64_t numReplicas, int64_t stride, int64_t groupSize)
    : n_(numReplicas), s_(stride), g_(groupSize) {
  const std::string what =
      format("ReplicaGrouping(numReplicas={}, stride={}, groupSize={})", n_, s_, g_);
  if (n_ <= 0 || s_ <= 0 || g_ <= 0) {
    throw error("{}: the number of replicas, the stride and the group size must be positive", what);
  }
  if (n_ % (s_ * g_) != 0) {
    throw error(
        "{}: the number of replicas must be divisible by the product of the stride and the "
        "group size ({} * {} = {})",
        what, s_, g_, s_ * g_);
  }
  if (g_ == 1) s_ = 1;
}

Grouping Grouping::fromCommGroup(const CommGroup& group, int64_t numReplicas) {
  const int64_t k = group.replicaGroupSize;
  switch (group.type) {
    case CommGroupType::All: return Grouping(numReplicas, 1, numReplicas);
    case CommGroupType::Ungrouped: return Grouping(numReplicas, 1, 1);
    case CommGroupType::Consecutive:
    case CommGroupType::Orthogonal:
      if (k <= 0 || numReplicas <= 0 || numReplicas % k != 0) {
        throw error(
            "CommGroup({}, {}) over {} replicas: the group size must be positive and divide "
            "the number of replicas",
            toString(group.type), k, numReplicas);
      }
      return group.type == CommGroupType::Consecutive ? Grouping(numReplicas, 1, k)
                                                      : Grouping(numReplicas, numReplicas / k, k);
  }
  throw error("unknown CommGroupType {}", static_cast<int>(group.type));
}

std::string Grouping::str() const {
  return format("ReplicaGrouping(numReplicas={}, stride={}, groupSize={})", n_, s_, g_);
}

int64_t Grouping::groupAt(int64_t r) const {
  if (r < 0 || r >= n_) {
    throw error("replica index {} is outside the valid range [0, {}) of {}", r, n_, str());
  }
  return r % s_ + s_ * (r / (s_ * g_));
}

int64_t Grouping::replicaAt(int64_t group, int64_t i) const {
  if (group < 0 || group >= numGroups()) {
    throw error("group index {} is outside the valid range [0, {}) of {}", group, numGroups(),
                str());
  }
  if (i < 0 || i >= g_) {
    throw error("index in group {} is outside the valid range [0, {}) of {}", i, g_, str());
  }
  return (group / s_) * (s_ * g_) + group % s_ + i * s_;
}

int64_t Grouping::indexInGroup(int64_t r) const {
  return (r - replicaAt(groupAt(r), 0)) / s_;
}

std::vector<int> Grouping::members(int64_t group) const {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(g_));
  for (int64_t i = 0; i < g_; ++i) out.push_back(static_cast<int>(replicaAt(group, i)));
  return out;
}

GroupCommunicator splitByGrouping(Communicator& parent, const Grouping& grouping,
                                  const std::string& name) {
  if (parent.size() != grouping.numReplicas()) {
    throw error("{} cannot split group '{}' of {} ranks: the grouping is for {} replicas",
                grouping.str(), parent.name(), parent.size(), grouping.numReplicas());
  }
  GroupCommunicator out;
  out.group = grouping.groupAt(parent.rank());
  out.indexInGroup = grouping.indexInGroup(parent.rank());
  out.comm = parent.split(grouping.members(out.group), name + "." + std::to_string(out.group));
  return out;
}

GroupCommunicator splitByCommGroup(Communicator& parent, const CommGroup& group,
                                   const std::string& name) {
  return splitByGrouping(parent, Grouping::fromCommGroup(group, parent.size()), name);
}

}  // namespace xtrain::comm
