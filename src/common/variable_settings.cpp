#include <ostream>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"
#include "xtrain/variablesettings.hpp"

namespace xtrain {

namespace {

bool isKnown(VariableRetrievalMode mode) {
  return mode == VariableRetrievalMode::OnePerGroup ||
         mode == VariableRetrievalMode::AllReduceReplicas ||
         mode == VariableRetrievalMode::AllReplicas;
}

bool isSized(CommGroupType type) {
  return type == CommGroupType::Consecutive || type == CommGroupType::Orthogonal;
}

std::string tensorName(const TensorId& name) {
  return name.empty() ? std::string("tensor") : format("tensor '{}'", name);
}

}  // namespace

VariableSettings::VariableSettings(CommGroup sharedVariableDomain,
                                   VariableRetrievalMode retrievalMode)
    : sharedVariableDomain_(sharedVariableDomain), retrievalMode_(retrievalMode) {
  const auto type = sharedVariableDomain.type;
  if (type != CommGroupType::All && type != CommGroupType::Ungrouped && !isSized(type)) {
    throw error("VariableSettings: unknown CommGroupType {} in the shared variable domain",
                static_cast<int>(type));
  }
  if (isSized(type) && sharedVariableDomain.replicaGroupSize == 0) {
    throw error("{}: a {} shared variable domain needs a replica group size of at least 1", str(),
                toString(type));
  }
  if (!isKnown(retrievalMode)) {
    throw error("VariableSettings: unknown VariableRetrievalMode {}",
                static_cast<int>(retrievalMode));
  }
}

VariableSettings::VariableSettings(VariableRetrievalMode retrievalMode)
    : VariableSettings(CommGroup(), retrievalMode) {}

VariableSettings::VariableSettings(int64_t stride, int64_t groupSize,
                                   VariableRetrievalMode retrievalMode)
    : useCommGroup_(false), stride_(stride), groupSize_(groupSize), retrievalMode_(retrievalMode) {
  if (stride <= 0 || groupSize <= 0) {
    throw error("{}: the stride and the group size must be positive integers", str());
  }
  if (!isKnown(retrievalMode)) {
    throw error("VariableSettings: unknown VariableRetrievalMode {}",
                static_cast<int>(retrievalMode));
  }
  if (groupSize_ == 1) stride_ = 1;
}

VariableSettings::VariableSettings(const ReplicaGrouping& grouping,
                                   VariableRetrievalMode retrievalMode)
    : VariableSettings(grouping.getStride(), grouping.getGroupSize(), retrievalMode) {
  numReplicas_ = grouping.getNumReplicas();
}

CommGroup VariableSettings::getSharedVariableDomain() const {
  if (!useCommGroup_) {
    throw error(
        "{} was not built from a CommGroup: it has no shared variable domain of its own; use "
        "getReplicaGrouping(numReplicas) (and ReplicaGrouping::toCommGroup())",
        str());
  }
  return sharedVariableDomain_;
}

ReplicaGrouping VariableSettings::getReplicaGrouping(int64_t replicaCount) const {
  if (replicaCount <= 0) {
    throw error("{} over {} replicas: the number of replicas must be a positive integer", str(),
                replicaCount);
  }
  if (useCommGroup_) {
    const int64_t k = sharedVariableDomain_.replicaGroupSize;
    if (isSized(sharedVariableDomain_.type) && replicaCount % k != 0) {
      throw error(
          "{} over {} replicas: its groups do not divide the replicas (the group size {} must "
          "divide the number of replicas {})",
          str(), replicaCount, k, replicaCount);
    }
    return ReplicaGrouping::fromCommGroup(sharedVariableDomain_, replicaCount);
  }
  if (numReplicas_ > 0 && replicaCount != numReplicas_) {
    throw error("{} over {} replicas: its grouping is for {} replicas", str(), replicaCount,
                numReplicas_);
  }
  if (replicaCount % (stride_ * groupSize_) != 0) {
    throw error(
        "{} over {} replicas: its groups do not divide the replicas (the number of replicas must "
        "be divisible by the product of the stride and the group size, {} * {} = {})",
        str(), replicaCount, stride_, groupSize_, stride_ * groupSize_);
  }
  return ReplicaGrouping(replicaCount, stride_, groupSize_);
}

std::vector<std::vector<int64_t>> VariableSettings::groups(int64_t replicaCount) const {
  return getReplicaGrouping(replicaCount).getGroups();
}

int64_t VariableSettings::getGroupCount(int64_t replicaCount) const {
  return getReplicaGrouping(replicaCount).getNumGroups();
}

int64_t VariableSettings::getRealGroupSize(int64_t replicaCount) const {
  return getReplicaGrouping(replicaCount).getGroupSize();
}

int64_t VariableSettings::getStride(int64_t replicaCount) const {
  return getReplicaGrouping(replicaCount).getStride();
}

int64_t VariableSettings::getGroupRepresentative(int64_t group) const {
  if (group < 0) {
    throw error("{}: the group index {} must not be negative", str(), group);
  }
  if (numReplicas_ > 0) return getReplicaGrouping(numReplicas_).getReplicaAt(group);
  if (useCommGroup_) {
    switch (sharedVariableDomain_.type) {
      case CommGroupType::All:
        if (group != 0) {
          throw error("{}: the group index {} is outside the valid range [0, 1)", str(), group);
        }
        return 0;
      case CommGroupType::Consecutive:
        return group * static_cast<int64_t>(sharedVariableDomain_.replicaGroupSize);
      case CommGroupType::Orthogonal:  // groups 0 .. R/k - 1 start at replicas 0 .. R/k - 1
      case CommGroupType::Ungrouped: return group;
    }
    throw internal_error("{}: unknown CommGroupType {}", str(),
                         static_cast<int>(sharedVariableDomain_.type));
  }
  // The representative does not depend on the replica count: any count with more than `group`
  // groups gives the same answer.
  const int64_t span = stride_ * groupSize_;
  return ReplicaGrouping(span * (group / stride_ + 1), stride_, groupSize_).getReplicaAt(group);
}

int64_t VariableSettings::getGroupRepresentative(int64_t group, int64_t replicaCount) const {
  return getReplicaGrouping(replicaCount).getReplicaAt(group);
}

int64_t VariableSettings::numReplicasReturningVariable(int64_t replicaCount) const {
  const auto grouping = getReplicaGrouping(replicaCount);
  switch (retrievalMode_) {
    case VariableRetrievalMode::OnePerGroup: return grouping.getNumGroups();
    case VariableRetrievalMode::AllReplicas: return replicaCount;
    case VariableRetrievalMode::AllReduceReplicas: break;
  }
  throw error(
      "{}: the retrieval mode {} is not supported (nor is it in PopART); use OnePerGroup or "
      "AllReplicas",
      str(), toString(retrievalMode_));
}

Shape VariableSettings::shapeOnHost(const Shape& shapeOnReplica, int64_t replicaCount) const {
  const int64_t groups = getGroupCount(replicaCount);
  if (groups == 1) return shapeOnReplica;
  Shape out{groups};
  out.insert(out.end(), shapeOnReplica.begin(), shapeOnReplica.end());
  return out;
}

Shape VariableSettings::shapeOnReplica(const Shape& shapeOnHost, int64_t replicaCount,
                                       const TensorId& name) const {
  const int64_t groups = getGroupCount(replicaCount);
  if (groups == 1) return shapeOnHost;
  if (shapeOnHost.empty() || shapeOnHost[0] != groups) {
    Shape rest = shapeOnHost.empty() ? Shape{} : Shape(shapeOnHost.begin() + 1, shapeOnHost.end());
    Shape expected{groups};
    expected.insert(expected.end(), rest.begin(), rest.end());
    throw error(
        "The host shape {} of {} does not match {} over {} replicas: its leading dimension must "
        "be the group count {} (host shape {} for replica shape {})",
        shapeOnHost, tensorName(name), str(), replicaCount, groups, expected, rest);
  }
  return Shape(shapeOnHost.begin() + 1, shapeOnHost.end());
}

Shape VariableSettings::shapeOnHostForRetrieval(const Shape& shapeOnReplica,
                                                int64_t replicaCount) const {
  const int64_t returned = numReplicasReturningVariable(replicaCount);
  if (returned == 1) return shapeOnReplica;
  Shape out{returned};
  out.insert(out.end(), shapeOnReplica.begin(), shapeOnReplica.end());
  return out;
}

void VariableSettings::verify(int64_t replicaCount) const {
  (void)numReplicasReturningVariable(replicaCount);
}

std::string VariableSettings::str() const {
  if (useCommGroup_) {
    return format("VariableSettings(sharedVariableDomain={}, retrievalMode={})",
                  toString(sharedVariableDomain_), toString(retrievalMode_));
  }
  if (numReplicas_ > 0) {
    return format("VariableSettings({}, retrievalMode={})",
                  ReplicaGrouping(numReplicas_, stride_, groupSize_).str(),
                  toString(retrievalMode_));
  }
  return format("VariableSettings(stride={}, groupSize={}, retrievalMode={})", stride_, groupSize_,
                toString(retrievalMode_));
}

std::ostream& operator<<(std::ostream& os, VariableRetrievalMode mode) {
  return os << toString(mode);
}

std::ostream& operator<<(std::ostream& os, const VariableSettings& settings) {
  return os << settings.str();
}

}  // namespace xtrain
