#include "replication/grouped_variable.hpp"

#include <cstring>

#include "common/check.hpp"

namespace xtrain::replication {

namespace {

Shape prefixed(int64_t n, const Shape& shape) {
  Shape out{n};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

size_t groupStride(const HostTensor& hostView) {
  const int64_t groups = hostView.shape().empty() ? 1 : hostView.shape()[0];
  return groups == 0 ? 0 : hostView.nbytes() / static_cast<size_t>(groups);
}

}  // namespace

Shape GroupedVariable::hostShape() const {
  return prefixed(groups(), replicaShape);
}

Shape GroupedVariable::retrievalShape() const {
  return settings.shapeOnHostForRetrieval(replicaShape, grouping.getNumReplicas());
}

GroupedVariable::GroupedVariable(const VariableSettings& s, int64_t globalReplicas,
                                 int64_t localReplicas, const Shape& shape)
    : settings(s),
      grouping(s.getReplicaGrouping(globalReplicas)),
      replicaShape(shape),
      spansInstances(groupsSpanInstances(grouping, localReplicas)) {}

bool groupsSpanInstances(const ReplicaGrouping& grouping, int64_t localReplicas) {
  for (const auto& members : grouping.getGroups()) {
    for (int64_t r : members) {
      if (r / localReplicas != members.front() / localReplicas) return true;
    }
  }
  return false;
}

std::byte* groupBytes(HostTensor& hostView, int64_t group) {
  return hostView.raw() + static_cast<size_t>(group) * groupStride(hostView);
}

const std::byte* groupBytes(const HostTensor& hostView, int64_t group) {
  return hostView.raw() + static_cast<size_t>(group) * groupStride(hostView);
}

HostTensor groupSlice(const HostTensor& hostView, int64_t group, const Shape& replicaShape) {
  HostTensor one(TensorInfo(hostView.dataType(), replicaShape));
  XT_CHECK_EQ(one.nbytes(), groupStride(hostView), "group slice of {}", hostView.info().toString());
  std::memcpy(one.raw(), groupBytes(hostView, group), one.nbytes());
  return one;
}

HostTensor tileGroups(const HostTensor& value, int64_t groups) {
  HostTensor out(TensorInfo(value.dataType(), prefixed(groups, value.shape())));
  for (int64_t g = 0; g < groups; ++g) std::memcpy(groupBytes(out, g), value.raw(), value.nbytes());
  return out;
}

HostTensor toRetrieval(const GroupedVariable& v, const HostTensor& hostView) {
  if (v.settings.getRetrievalMode() != VariableRetrievalMode::AllReplicas) return hostView;
  const int64_t replicas = v.grouping.getNumReplicas();
  HostTensor out(TensorInfo(hostView.dataType(), prefixed(replicas, v.replicaShape)));
  const size_t bytes = groupStride(hostView);
  for (int64_t r = 0; r < replicas; ++r) {
    std::memcpy(out.raw() + static_cast<size_t>(r) * bytes,
                groupBytes(hostView, v.grouping.getGroupAt(r)), bytes);
  }
  return out;
}

HostTensor fromRetrieval(const GroupedVariable& v, const HostTensor& retrieval) {
  if (v.settings.getRetrievalMode() != VariableRetrievalMode::AllReplicas) return retrieval;
  HostTensor out(TensorInfo(retrieval.dataType(), v.hostShape()));
  const size_t bytes = groupStride(out);
  for (int64_t g = 0; g < v.groups(); ++g) {
    const int64_t representative = v.grouping.getReplicaAt(g, 0);
    std::memcpy(groupBytes(out, g), retrieval.raw() + static_cast<size_t>(representative) * bytes,
                bytes);
  }
  return out;
}

}  // namespace xtrain::replication
