// ReplicaCollectives (device/replica_context.hpp): how the replicated collective ops of a model
// meet the other replicas of their group.
//
// Local replicas are threads of this instance (the session's ReplicaPool). They meet at the comm
// layer's Rendezvous (comm/rendezvous.hpp), the one the inproc backend's ranks meet at: at each
// collective every local replica arrives, publishing its signature and a pointer to its input; the
// last to arrive completes the round, and each replica then computes its own output from its
// group's inputs with the shared reduction kernel (comm/reduce.hpp), in the group's order (so every
// member computes the same bits), and waits until all have done so before returning (its input
// must stay untouched while others read it). Replicas of every group take part in every round:
// they run the same program, so they reach the same collectives in the same order.
//
// Across instances (when a group has members in more than one instance), the last local replica to
// arrive all-gathers every instance's local inputs over the instances' communicator, so that each
// instance holds the inputs of all G replicas ([G x n] elements) and computes as above. That costs
// (I - 1) * L * n elements received per instance and collective (I instances of L replicas), more
// than a ring reduction would, but it is simple, serves the three collectives and every operator,
// and gives the same bits whatever the split of replicas into instances. Models put small tensors
// through these ops; gradients go through the bucketed GradientReducer instead. The exchange shares
// the communicator with the GradientReducer: every instance issues both in the same order (program
// order on one thread with one local replica; the reducer runs between the replicas' program runs
// otherwise), as the communicator's ordering contract requires.
//
// Waits are bounded: a replica whose local peers do not arrive within the timeout (the
// communicator's, else XTRAIN_COMM_TIMEOUT, else 300 s) throws, naming the missing replicas; a
// replica that fails (ReplicaScope tells replicaFailed) makes its waiting peers throw at once; the
// exchange across instances is bounded by the communicator. After a failure the collectives fail
// until every local replica has left its program run; the next run starts clean.
//
// When a caller runs several local replicas one after another on one thread (ReplicaScope with
// concurrent false), a collective among local replicas cannot meet and throws a clear error
// instead of waiting.
//
// Profile: local replica 0's collectives go to the recorder (setRecorder), by grouping and
// operation: calls, input bytes, seconds from arrival to departure.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/rendezvous.hpp"
#include "device/replica_context.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::replication {

// One collective of local replica 0, for the session's profile.
struct CollectiveRecord {
  std::string communicator;  // the grouping (ReplicaGrouping::str())
  int64_t groupSize = 0;
  const char* operation = "";  // "all-reduce", "reduce-scatter", "all-gather"
  std::string what;            // the op's type: the first word of its description
  uint64_t bytes = 0;          // input bytes
  double seconds = 0;          // from arrival to departure
};

class ReplicaCollectives final : public device::ReplicaCollectives {
 public:
  // instances: one rank per instance, rank i holding the global replicas [i*L, (i+1)*L); nullptr
  // when the job has one instance (then globalReplicas == localReplicas). timeout: unset takes the
  // communicator's, else comm::defaultTimeout().
  ReplicaCollectives(std::shared_ptr<comm::Communicator> instances, int64_t localReplicas,
                     int64_t replicaOffset, int64_t globalReplicas,
                     std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  ~ReplicaCollectives() override;

  int64_t numReplicas() const override { return globalReplicas_; }
  int64_t localReplicas() const override { return localReplicas_; }
  int64_t replicaOffset() const override { return replicaOffset_; }

  void allReduce(int64_t localReplica, const HostTensor& input, HostTensor& output,
                 const ReplicaGrouping& grouping, CollectiveOperator op,
                 const std::string& what) override;
  void reduceScatter(int64_t localReplica, const HostTensor& input, HostTensor& output,
                     const ReplicaGrouping& grouping, CollectiveOperator op,
                     const std::string& what) override;
  void allGather(int64_t localReplica, const HostTensor& input, HostTensor& output,
                 const ReplicaGrouping& grouping, const std::string& what) override;

  // Where local replica 0 records its collectives (empty: nowhere); called on replica 0's thread.
  using Recorder = std::function<void(const CollectiveRecord&)>;
  void setRecorder(Recorder recorder) { recorder_ = std::move(recorder); }

  void replicaFailed(int64_t localReplica) override;
  void enter(int64_t localReplica, bool concurrent) override;
  void leave(int64_t localReplica) override;

 private:
  // What every local replica must agree on in a round.
  struct Signature {
    int kind = 0;
    DataType type = DataType::FLOAT;
    int64_t count = 0;  // input elements
    int64_t stride = 0;
    int64_t groupSize = 0;
    CollectiveOperator op = CollectiveOperator::Add;
    std::string what;
    bool operator==(const Signature&) const = default;
    std::string str() const;
  };
  // What a local replica publishes at the rendezvous.
  struct Slot {
    Signature signature;
    const std::byte* input = nullptr;
  };
  // The inputs of a round: every global replica's when they were exchanged, else the local ones'.
  class Inputs;

  // One round: arrive, (exchange), compute(inputs) this replica's output, depart.
  void meet(int64_t localReplica, const Signature& signature, const HostTensor& input,
            const std::function<void(const Inputs&)>& compute);
  comm::RendezvousWait arrival(const Signature& signature);
  comm::RendezvousWait departure() const;
  [[noreturn]] static void raise(const std::string& what, const comm::RendezvousFailure& failure);
  bool spansInstances(const ReplicaGrouping& grouping) const;
  // Adds local replica 0's call to the recorder (from `start` to now).
  void record(int64_t localReplica, const char* operation, const HostTensor& input,
              const ReplicaGrouping& grouping, const std::string& what,
              std::chrono::steady_clock::time_point start);
  void exchange(const Signature& signature);
  std::string missingReplicas(const std::vector<int>& missing) const;

  std::shared_ptr<comm::Communicator> instances_;
  const int64_t localReplicas_;
  const int64_t replicaOffset_;
  const int64_t globalReplicas_;
  const std::chrono::milliseconds timeout_;

  comm::Rendezvous<Slot> rendezvous_;
  // Written by a round's last local replica to arrive, read by all after the arrival.
  bool exchanged_ = false;
  std::vector<std::byte> send_;      // [L x n] local inputs, for the exchange
  std::vector<std::byte> gathered_;  // [G x n] every replica's input after the exchange

  std::mutex mu_;        // the program runs' bookkeeping below
  int64_t active_ = 0;   // local replicas inside a ReplicaScope
  int64_t entered_ = 0;  // scopes entered since the last reset
  bool concurrent_ = true;
  Recorder recorder_;
};

}  // namespace xtrain::replication

#pragma GCC visibility pop
