// The state the threads (ranks) of one inproc group share: their rendezvous (comm/rendezvous.hpp),
// with one slot per rank through which the ranks see each other's buffers.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "comm/fingerprint.hpp"
#include "comm/rendezvous.hpp"
#include "comm/types.hpp"

namespace xtrain::comm::inproc {

// What rank r publishes for the current collective, at its arrival; read by every rank between
// the arrival and the departure barrier.
struct Slot {
  Fingerprint fingerprint;
  const void* src = nullptr;
  void* dst = nullptr;
};

class Group {
 public:
  Group(std::string name, int size);

  const std::string& name() const { return name_; }
  int size() const { return size_; }
  // Rank r's slot of the current collective.
  const Slot& slot(int rank) const { return rendezvous_.slot(rank); }

  // Publishes `slot` as rank's and waits until all ranks arrived (the departure is a plain barrier:
  // wait()). On timeout, fails the group with a CommTimeoutError message
  // "<what()>: ... ranks [..] did not arrive" and throws it. If the group fails while waiting,
  // throws that failure's error; if it failed before, throws CommAbortedError.
  void arrive(int rank, const Slot& slot, Milliseconds timeout,
              const std::function<std::string()>& what);
  void wait(int rank, Milliseconds timeout, const std::function<std::string()>& what);

  using Failure = RendezvousFailure::Kind;
  // Marks the group failed (the first failure wins) and wakes every waiting rank.
  void abort(Failure kind, const std::string& message);
  // Throws CommAbortedError if the group was aborted.
  void throwIfAborted() const;

  // The sub-group a split with this key creates: the first member creates it, the others get the
  // same one.
  std::shared_ptr<Group> joinSplit(const std::string& key, int size, const std::string& childName);

  // Counts ranks attached to a freshly created world group; true for the last one.
  bool attach();

 private:
  RendezvousWait waitFor(Milliseconds timeout, const std::function<std::string()>& what) const;
  [[noreturn]] void raise(const RendezvousFailure& failure) const;

  const std::string name_;
  const int size_;
  Rendezvous<Slot> rendezvous_;

  std::mutex mu_;  // splits_, attached_
  struct PendingSplit {
    std::shared_ptr<Group> group;
    int joined = 0;
  };
  std::map<std::string, PendingSplit> splits_;
  int attached_ = 0;
};

}  // namespace xtrain::comm::inproc

#pragma GCC visibility pop
