// Agreement: the leader handshake of the mpi backend. Before a step that a set of ranks must take
// together (a collective's arrival phase, a split), every rank tells a leader what it is about to
// do, and the leader answers with one verdict for all: go, mismatch, timeout or aborted. The
// exchanges are point-to-point receives, which MPI can cancel, so a step that fails here leaves
// nothing pending (unlike a collective, which MPI cannot cancel).
//
// Protocol, on the communicator's own MPI_Comm and the step kind's three tags:
//  - every member sends "hello" [id, words...] to the leader and waits (timeout + grace, grace =
//    min(timeout, 2 s): the leader decides timeouts, so a member waits longer before blaming it)
//    for the verdict [id, kind, message];
//  - the leader receives every member's hello until its timeout. A hello whose id this rank
//    abandoned earlier (a late message of a failed step) is dropped. Then it compares the
//    proposals (AgreementSpec::compare) and sends the verdict: go; mismatch with the comparison's
//    message; timeout naming the members that did not arrive (those get "aborted", so that when
//    they do arrive they fail at once instead of waiting); aborted when a member gave up first;
//  - a member whose wait ends without a verdict sends "give-up" [id] to the leader (so that a late
//    leader fails instead of starting the step alone) and reports the leader as missing. A verdict
//    for an id it abandoned (a step it gave up on) is dropped.
// Ids identify the step (a collective's sequence number, a split's hash); ids of failed steps are
// remembered so that their late messages are recognised.
#pragma once

#include <mpi.h>
#pragma GCC visibility push(default)

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "comm/types.hpp"

namespace xtrain::comm::mpi {

struct AgreementTags {
  int hello;
  int verdict;
  int giveUp;
};

// What one rank proposes for the step.
struct Proposal {
  uint64_t id = 0;              // the step's identity; equal on every rank unless they disagree
  std::vector<uint64_t> words;  // compared by the leader (same length on every rank)
};

enum class Verdict : uint8_t { Go = 0, Mismatch = 1, Timeout = 2, Aborted = 3 };

struct Outcome {
  Verdict verdict = Verdict::Go;
  std::string message;  // empty for Go
};

struct AgreementSpec {
  MPI_Comm comm = MPI_COMM_NULL;
  AgreementTags tags{};
  int self = 0;              // this rank in `comm`
  int leader = 0;            // the leader's rank in `comm`
  std::vector<int> members;  // the other ranks in `comm` (not the leader)
  Proposal mine;
  Milliseconds timeout{0};  // the leader's wait; members wait a grace longer
  std::string what;         // the step, for messages ("barrier seq 3", "split of ...")
  std::string group;        // the group's name and size, for messages
  int size = 0;
  // Leader: the mismatch message, if any, given every proposal (the leader's first, then
  // members[i]'s at i + 1).
  std::function<std::optional<std::string>(const std::vector<Proposal>&)> compare;
};

// The agreements of one MPI communicator (it keeps the ids of the steps that failed).
class Agreements {
 public:
  Agreements() = default;
  Agreements(const Agreements&) = delete;
  Agreements& operator=(const Agreements&) = delete;
  ~Agreements();

  // Runs the handshake as the leader or as a member (spec.self). Thread-safe: steps of different
  // kinds (tags) may run at once.
  Outcome agree(const AgreementSpec& spec);

 private:
  Outcome lead(const AgreementSpec& spec);
  Outcome follow(const AgreementSpec& spec);
  std::optional<std::string> memberGaveUp(const AgreementSpec& spec);
  void sendVerdicts(const AgreementSpec& spec, const Outcome& out, const std::vector<int>& missing);
  void abandon(uint64_t id);
  bool abandoned(uint64_t id);

  // A request this rank stopped waiting for (a send not done within its limit, a receive whose
  // cancellation did not complete) and the buffer MPI may still read or write: the buffer stays
  // here until MPI_Test says the request is done, never freed under a live request.
  struct Orphan {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<char> chars;
    std::vector<uint64_t> words;
  };
  // Waits `limit` at most for a send of `buffer`; still pending, both become an orphan.
  template <typename T>
  void finishSend(MPI_Request& request, std::vector<T> buffer, Milliseconds limit);
  void adopt(Orphan orphan);
  void reapOrphans();

  std::mutex mu_;  // guards abandoned_, giveUps_ and orphans_
  std::set<uint64_t> abandoned_;
  std::deque<uint64_t> giveUps_;  // buffers of the give-up messages sent (MPI may still read them)
  std::deque<Orphan> orphans_;
};

}  // namespace xtrain::comm::mpi

#pragma GCC visibility pop
