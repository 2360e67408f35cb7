// How a kernel running on one replica reaches the other replicas: the replicated collectives
// (ReplicatedAllReduce, ...; src/device/kernels/collective_kernels.cpp) call the ReplicaCollectives
// of the replica their thread is running. The replication layer implements the interface (the
// replicas' rendezvous and the communicator of the instances:
// src/replication/replica_collectives.*), the session sets the context around each replica's
// program runs; the device only knows this header.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>

#include "common/host_tensor.hpp"
#include "xtrain/collectives.hpp"
#include "xtrain/replicagrouping.hpp"

namespace xtrain::device {

// Contract (every method):
//  - `localReplica` is the calling replica's index in this instance, in [0, localReplicas()); its
//    global index is replicaOffset() + localReplica. `grouping` is over numReplicas() replicas.
//  - Every replica of the job (all instances) calls the same collectives in the same order with
//    the same grouping, operator, type and element count (they run the same program); each call
//    returns when the members of the caller's group have contributed. Replicas of other groups
//    meet at the same time, so a call blocks until every local replica has made it.
//  - Results are bitwise identical on every member of a group.
//  - `what` names the op in errors. A peer that does not arrive within the timeout, a mismatch,
//    or a failed peer makes every waiting replica throw xtrain::error; no call waits forever.
//  - Inputs and outputs are FLOAT or FLOAT16, of the same type; `output` is not `input`.
class ReplicaCollectives {
 public:
  virtual ~ReplicaCollectives() = default;

  virtual int64_t numReplicas() const = 0;
  virtual int64_t localReplicas() const = 0;
  virtual int64_t replicaOffset() const = 0;

  // output (same count as input) = the reduction of the group's inputs.
  virtual void allReduce(int64_t localReplica, const HostTensor& input, HostTensor& output,
                         const ReplicaGrouping& grouping, CollectiveOperator op,
                         const std::string& what) = 0;
  // output has s = ceil(n / k) elements: part i (i = the caller's index in its group) of the
  // reduction of the inputs (n elements) zero-padded to k*s.
  virtual void reduceScatter(int64_t localReplica, const HostTensor& input, HostTensor& output,
                             const ReplicaGrouping& grouping, CollectiveOperator op,
                             const std::string& what) = 0;
  // output has k*s elements: the inputs (s elements each) of the members in group order.
  virtual void allGather(int64_t localReplica, const HostTensor& input, HostTensor& output,
                         const ReplicaGrouping& grouping, const std::string& what) = 0;

  // Called when a replica's program stops with an error: peers waiting for it fail at once rather
  // than at the timeout.
  virtual void replicaFailed(int64_t localReplica) = 0;
  // A replica thread starts (enter) or ends (leave) running programs; see ReplicaScope.
  virtual void enter(int64_t localReplica, bool concurrent) = 0;
  virtual void leave(int64_t localReplica) = 0;
};

// What the calling thread is running. `concurrent`: the instance's other local replicas run at the
// same time on their own threads (false when the session runs them one after another on one
// thread, where a collective among local replicas cannot meet).
struct ReplicaContext {
  ReplicaCollectives* collectives = nullptr;
  int64_t localReplica = 0;
  bool concurrent = true;
};

// The calling thread's context, or nullptr outside a replica's program run (a program run directly,
// e.g. by a test, has no replicas to meet: collective kernels refuse to run there).
const ReplicaContext* currentReplica();

// Makes `localReplica` of `collectives` the calling thread's context for the scope's lifetime (the
// previous context is restored after). When the scope ends by an exception, it tells the
// collectives that the replica failed (replicaFailed), so its peers stop waiting.
class [[nodiscard]] ReplicaScope {
 public:
  ReplicaScope(ReplicaCollectives& collectives, int64_t localReplica, bool concurrent);
  ~ReplicaScope();
  ReplicaScope(const ReplicaScope&) = delete;
  ReplicaScope& operator=(const ReplicaScope&) = delete;

 private:
  ReplicaContext context_;
  const ReplicaContext* previous_;
  int uncaught_;
};

// Runs the calling thread as a helper of a replica that is inside a ReplicaScope on another thread
// (a pipeline stage's thread works for its replica): the thread's context is `context` for the
// scope's lifetime, without entering or leaving the collectives (the replica's own ReplicaScope
// does that, and reports its failure). `context` may be nullptr (then nothing changes).
class [[nodiscard]] ReplicaHelperScope {
 public:
  explicit ReplicaHelperScope(const ReplicaContext* context);
  ~ReplicaHelperScope();
  ReplicaHelperScope(const ReplicaHelperScope&) = delete;
  ReplicaHelperScope& operator=(const ReplicaHelperScope&) = delete;

 private:
  const ReplicaContext* previous_;
};

}  // namespace xtrain::device

#pragma GCC visibility pop
