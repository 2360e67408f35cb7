// Grouped variables (docs/replication-semantics.md section 4): a weight whose VariableSettings
// split the replicas into more than one group holds one value per group. Its optimizer state
// follows it. The host view of such a tensor is [groups] + shape; replicas hold the per-replica
// shape.
//
// This file holds the layout arithmetic the session needs for them: which group a replica
// belongs to, the slices of the host view, and the conversions between the host view and the
// read/write buffers of each retrieval mode.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <vector>

#include "common/host_tensor.hpp"
#include "xtrain/names.hpp"
#include "xtrain/replicagrouping.hpp"
#include "xtrain/variablesettings.hpp"

namespace xtrain::replication {

struct GroupedVariable {
  VariableSettings settings;
  ReplicaGrouping grouping;  // over the global replicas
  Shape replicaShape;        // a replica's shape; the host view is [groups] + replicaShape

  // Whether some group has members in more than one instance (of localReplicas replicas each).
  bool spansInstances = false;

  GroupedVariable(const VariableSettings& s, int64_t globalReplicas, int64_t localReplicas,
                  const Shape& shape);

  int64_t groups() const { return grouping.getNumGroups(); }
  Shape hostShape() const;
  // The shape of readWeights / writeWeights buffers: [groups] + shape (OnePerGroup) or
  // [replicas] + shape (AllReplicas).
  Shape retrievalShape() const;
};

// Whether some group of `grouping` has members in more than one instance, the instances holding
// `localReplicas` consecutive replicas each.
bool groupsSpanInstances(const ReplicaGrouping& grouping, int64_t localReplicas);

// Group `group` of a host view, as a tensor of the per-replica shape.
HostTensor groupSlice(const HostTensor& hostView, int64_t group, const Shape& replicaShape);
// Pointer to group `group`'s bytes inside a host view.
std::byte* groupBytes(HostTensor& hostView, int64_t group);
const std::byte* groupBytes(const HostTensor& hostView, int64_t group);

// A host view with every group holding `value` (the initial optimizer state of a grouped weight).
HostTensor tileGroups(const HostTensor& value, int64_t groups);

// Host view -> retrieval buffer contents (AllReplicas: each replica gets its group's value).
HostTensor toRetrieval(const GroupedVariable& v, const HostTensor& hostView);
// Retrieval buffer -> host view (AllReplicas: each group takes its representative's value, the
// lowest replica of the group, as PopART's weightsFromHost does).
HostTensor fromRetrieval(const GroupedVariable& v, const HostTensor& retrieval);

}  // namespace xtrain::replication

#pragma GCC visibility pop
