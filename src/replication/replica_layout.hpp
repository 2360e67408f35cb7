// ReplicaLayout: where a session's replicas are. A job of I instances runs G = I x L replicas;
// instance i holds the L consecutive global replicas [i L, (i + 1) L), its local replicas 0..L-1
// (docs/replication-semantics.md section 1).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>

namespace xtrain::replication {

struct ReplicaLayout {
  int64_t local = 1;   // L, the replicas of this instance
  int64_t global = 1;  // G, the replicas of the job
  int64_t offset = 0;  // the global index of this instance's replica 0

  int64_t instances() const { return global / local; }
  int instance() const { return static_cast<int>(offset / local); }
  int64_t globalIndex(int64_t localReplica) const { return offset + localReplica; }
  // The local index of a global replica, or -1 when another instance holds it.
  int64_t localIndex(int64_t globalReplica) const {
    const int64_t r = globalReplica - offset;
    return r >= 0 && r < local ? r : -1;
  }
  // The instance that holds a global replica.
  int instanceOf(int64_t globalReplica) const { return static_cast<int>(globalReplica / local); }
};

}  // namespace xtrain::replication

#pragma GCC visibility pop
