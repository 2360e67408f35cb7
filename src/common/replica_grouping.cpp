#include <ostream>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"
#include "xtrain/replicagrouping.hpp"

namespace xtrain {

const char* toString(CommGroupType type) {
  switch (type) {
    case CommGroupType::All: return "All";
    case CommGroupType::Consecutive: return "Consecutive";
    case CommGroupType::Orthogonal: return "Orthogonal";
    case CommGroupType::Ungrouped: return "Ungrouped";
  }
  return "?";
}

std::string toString(const CommGroup& group) {
  return format("CommGroup(type={}, replicaGroupSize={})", toString(group.type),
                group.replicaGroupSize);
}

std::ostream& operator<<(std::ostream& os, CommGroupType type) {
  return os << toString(type);
}

std::ostream& operator<<(std::ostream& os, const CommGroup& group) {
  return os << toString(group);
}

namespace {

std::string describe(int64_t n, int64_t s, int64_t g) {
  return format("ReplicaGrouping(numReplicas={}, stride={}, groupSize={})", n, s, g);
}

}  // namespace

ReplicaGrouping::ReplicaGrouping(int64_t numReplicas, int64_t stride, int64_t groupSize)
    : numReplicas_(numReplicas), stride_(stride), groupSize_(groupSize) {
  const auto what = [&] { return describe(numReplicas, stride, groupSize); };
  if (numReplicas <= 0) {
    throw error("{}: the number of replicas must be a positive integer", what());
  }
  if (stride <= 0) throw error("{}: the stride must be a positive integer", what());
  if (groupSize <= 0) throw error("{}: the group size must be a positive integer", what());
  if (numReplicas % (stride * groupSize) != 0) {
    throw error(
        "{}: the number of replicas must be divisible by the product of the stride and the "
        "group size ({} * {} = {})",
        what(), stride, groupSize, stride * groupSize);
  }
  if (groupSize_ == 1) stride_ = 1;
}

ReplicaGrouping::ReplicaGrouping(int64_t numReplicas, int64_t stride)
    : ReplicaGrouping(numReplicas, stride, stride > 0 ? numReplicas / stride : 0) {}

ReplicaGrouping ReplicaGrouping::fromCommGroup(const CommGroup& group, int64_t numReplicas) {
  if (numReplicas <= 0) {
    throw error("{} over {} replicas: the number of replicas must be a positive integer",
                toString(group), numReplicas);
  }
  const int64_t k = group.replicaGroupSize;
  switch (group.type) {
    case CommGroupType::All: return ReplicaGrouping(numReplicas, 1, numReplicas);
    case CommGroupType::Ungrouped: return ReplicaGrouping(numReplicas, 1, 1);
    case CommGroupType::Consecutive:
    case CommGroupType::Orthogonal:
      if (k <= 0 || numReplicas % k != 0) {
        throw error(
            "{} over {} replicas: the group size must be positive and divide the number of "
            "replicas",
            toString(group), numReplicas);
      }
      return group.type == CommGroupType::Consecutive
                 ? ReplicaGrouping(numReplicas, 1, k)
                 : ReplicaGrouping(numReplicas, numReplicas / k, k);
  }
  throw error("{}: unknown CommGroupType {}", toString(group), static_cast<int>(group.type));
}

std::optional<CommGroup> ReplicaGrouping::toCommGroup() const {
  if (groupSize_ == numReplicas_) return CommGroup(CommGroupType::All, 0);
  if (groupSize_ == 1) return CommGroup(CommGroupType::Ungrouped, 0);
  const auto k = static_cast<unsigned>(groupSize_);
  if (stride_ == 1) return CommGroup(CommGroupType::Consecutive, k);
  if (stride_ * groupSize_ == numReplicas_) return CommGroup(CommGroupType::Orthogonal, k);
  return std::nullopt;
}

void ReplicaGrouping::checkReplica(int64_t replica) const {
  if (replica < 0 || replica >= numReplicas_) {
    throw error("The replica index {} is outside the valid range [0, {}) of {}", replica,
                numReplicas_, str());
  }
}

void ReplicaGrouping::checkGroup(int64_t group) const {
  if (group < 0 || group >= getNumGroups()) {
    throw error("The group index {} is outside the valid range [0, {}) of {}", group,
                getNumGroups(), str());
  }
}

int64_t ReplicaGrouping::getGroupAt(int64_t replica) const {
  checkReplica(replica);
  return replica % stride_ + stride_ * (replica / (stride_ * groupSize_));
}

int64_t ReplicaGrouping::getIndexInGroupAt(int64_t replica) const {
  checkReplica(replica);
  return (replica - getReplicaAt(getGroupAt(replica))) / stride_;
}

int64_t ReplicaGrouping::getReplicaAt(int64_t group, int64_t index) const {
  checkGroup(group);
  if (index < 0 || index >= groupSize_) {
    throw error("The index in group {} is outside the valid range [0, {}) of {}", index, groupSize_,
                str());
  }
  return (group / stride_) * (stride_ * groupSize_) + group % stride_ + index * stride_;
}

std::vector<int64_t> ReplicaGrouping::getReplicasAt(int64_t group) const {
  const int64_t first = getReplicaAt(group);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(groupSize_));
  for (int64_t i = 0; i < groupSize_; ++i) out.push_back(first + i * stride_);
  return out;
}

std::vector<std::vector<int64_t>> ReplicaGrouping::getGroups() const {
  std::vector<std::vector<int64_t>> out;
  out.reserve(static_cast<size_t>(getNumGroups()));
  for (int64_t g = 0; g < getNumGroups(); ++g) out.push_back(getReplicasAt(g));
  return out;
}

ReplicaGrouping ReplicaGrouping::getTranspose() const {
  if (stride_ == 1) return ReplicaGrouping(numReplicas_, groupSize_, getNumGroups());
  if (stride_ * groupSize_ == numReplicas_) return ReplicaGrouping(numReplicas_, 1, stride_);
  throw error(
      "The transpose of {} cannot be represented as a ReplicaGrouping (only a grouping with "
      "stride 1 or with stride * groupSize == numReplicas has one)",
      str());
}

std::string ReplicaGrouping::str() const {
  return describe(numReplicas_, stride_, groupSize_);
}

std::ostream& operator<<(std::ostream& os, const ReplicaGrouping& grouping) {
  return os << grouping.str();
}

CommGroup complementOf(const CommGroup& group, int64_t numReplicas) {
  const auto transpose = ReplicaGrouping::fromCommGroup(group, numReplicas).getTranspose();
  // The transpose of a CommGroup's grouping always has stride 1 or spans all the replicas.
  return *transpose.toCommGroup();
}

}  // namespace xtrain
