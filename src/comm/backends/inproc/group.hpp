// The state the threads (ranks) of one inproc group share: a timed barrier and one slot per rank
// through which the ranks see each other's buffers.
#pragma once
#pragma GCC visibility push(default)

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/fingerprint.hpp"
#include "comm/types.hpp"

namespace xtrain::comm::inproc {

// What rank r publishes for the current collective. Written by rank r before the arrival barrier,
// read by every rank between the arrival and the departure barrier (the barrier's mutex orders the
// accesses).
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
  std::vector<Slot>& slots() { return slots_; }

  // Waits until all ranks called arrive() (a generation barrier). On timeout, aborts the group with
  // a CommTimeoutError message "<what()>: ... ranks [..] did not arrive" and throws it. If the
  // group is aborted while waiting, throws the abort's error; if it was aborted before, throws
  // CommAbortedError.
  void arrive(int rank, Milliseconds timeout, const std::function<std::string()>& what);

  enum class Failure { None, Timeout, Mismatch, Other };
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
  [[noreturn]] void throwAbortedLocked(bool whileWaiting) const;

  const std::string name_;
  const int size_;
  std::vector<Slot> slots_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<char> here_;
  Failure failure_ = Failure::None;
  std::string failureMessage_;

  struct PendingSplit {
    std::shared_ptr<Group> group;
    int joined = 0;
  };
  std::map<std::string, PendingSplit> splits_;
  int attached_ = 0;
};

}  // namespace xtrain::comm::inproc

#pragma GCC visibility pop
