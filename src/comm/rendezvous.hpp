// Rendezvous: where the threads of one process that take part in the same collectives meet, each
// a party with an index in [0, parties). Two users share it, so their waits and failures behave
// alike: the ranks of an inproc group (comm/backends/inproc) and the local replicas of a session
// (replication/replica_collectives).
//
// A collective is a round of two barriers around a compute phase:
//   1. arrive(): a party publishes its slot (what it does, a fingerprint; where its buffers are)
//      and waits until every party arrived. The last to arrive may first run a step that the
//      others wait for without a deadline (the replicas' exchange with other processes);
//   2. each party computes from the slots, which stay as published until the departure;
//   3. wait() (the departure): every party computed, so none returns while a peer reads its
//      buffers. The same wait without a slot serves a plain barrier (an inproc group's join).
//
// Waits are bounded by the caller's timeout: a party whose peers do not come fails the rendezvous
// with a message naming the missing ones. A failure (a timeout, a slot refused on arrival, a party
// arriving twice at one barrier, the last party's step throwing, or abort()) wakes every waiting
// party at once; the first failure wins, and every later arrival fails at once until reset(). A
// wait returns the failure that ended it and the caller throws its own error type from it.
#pragma once
#pragma GCC visibility push(default)

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/types.hpp"

namespace xtrain::comm {

// Why a rendezvous failed.
struct RendezvousFailure {
  enum class Kind { Timeout, Mismatch, Other };
  Kind kind = Kind::Other;
  std::string message;
  bool earlier = false;  // it had failed before the call; else it failed while the caller waited
};

// One wait's bound, messages and step (twice and timedOut are required).
struct RendezvousWait {
  Milliseconds timeout{0};
  // The failure's message when `party` arrives twice at one barrier.
  std::function<std::string(int party)> twice;
  // The failure's message when the parties `missing` (ascending) did not come within the timeout.
  // Called by the party that timed out, under the rendezvous's lock.
  std::function<std::string(const std::vector<int>& missing)> timedOut;
  // Empty, or run by the last party to arrive (without the lock) before the others are released.
  // When it throws, the rendezvous fails (kind Other, the exception's what() unless it failed
  // already) and the exception propagates.
  std::function<void()> last;
};

// The barrier under every Rendezvous: a generation barrier with a deadline and a failure state.
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int parties);

  int parties() const { return parties_; }

  // Called under the lock when a party arrives (not twice, the barrier not failed); `first`: no
  // other party arrived yet. A message refuses the arrival: the barrier fails (kind Mismatch).
  using Admit = std::function<std::optional<std::string>(bool first)>;
  // Party `party` arrives and waits for the others (see the contract above).
  [[nodiscard]] std::optional<RendezvousFailure> wait(int party, const RendezvousWait& w,
                                                      const Admit& admit = {});

  // Fails the barrier (unless it failed already) and wakes every waiting party.
  void abort(RendezvousFailure::Kind kind, std::string message);
  // The failure, if the barrier failed (earlier true).
  std::optional<RendezvousFailure> failure() const;
  // Forgets the failure and any partial barrier. Only while no party waits.
  void reset();

 private:
  void failLocked(RendezvousFailure::Kind kind, std::string message);
  RendezvousFailure failureLocked(bool earlier) const;
  std::vector<int> missingLocked() const;

  const int parties_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool completing_ = false;  // the last party runs its step
  std::vector<char> here_;   // per party: arrived at the current barrier
  std::optional<RendezvousFailure::Kind> kind_;
  std::string message_;
};

// A ThreadBarrier with one slot per party. Slot: what a party publishes for a round (copyable).
template <typename Slot>
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : barrier_(parties), slots_(static_cast<size_t>(parties)) {}

  int parties() const { return barrier_.parties(); }

  // Called under the lock when `party` arrives after another: a message refuses `mine` (the
  // rendezvous fails, kind Mismatch), e.g. when it does not match the round's first slot.
  using Check =
      std::function<std::optional<std::string>(int party, const Slot& mine, const Slot& first)>;
  // Publishes `slot` as party's for this round, then waits as ThreadBarrier::wait.
  [[nodiscard]] std::optional<RendezvousFailure> arrive(int party, Slot slot,
                                                        const RendezvousWait& w,
                                                        const Check& check = {}) {
    return barrier_.wait(party, w, [&](bool first) -> std::optional<std::string> {
      slots_[static_cast<size_t>(party)] = std::move(slot);
      if (first) {
        first_ = party;
        return std::nullopt;
      }
      if (!check) return std::nullopt;
      return check(party, slots_[static_cast<size_t>(party)], slots_[static_cast<size_t>(first_)]);
    });
  }
  // A barrier that publishes nothing: the departure of a round, or a plain barrier.
  [[nodiscard]] std::optional<RendezvousFailure> wait(int party, const RendezvousWait& w) {
    return barrier_.wait(party, w);
  }

  // Party p's slot of the current round: read between the arrival and the departure.
  const Slot& slot(int party) const { return slots_[static_cast<size_t>(party)]; }

  void abort(RendezvousFailure::Kind kind, std::string message) {
    barrier_.abort(kind, std::move(message));
  }
  std::optional<RendezvousFailure> failure() const { return barrier_.failure(); }
  void reset() { barrier_.reset(); }

 private:
  ThreadBarrier barrier_;
  std::vector<Slot> slots_;  // written under the barrier's lock, by their party
  int first_ = 0;            // the party that arrived first this round
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
