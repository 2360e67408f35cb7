#include "comm/backends/inproc/group.hpp"

#include <algorithm>
#include <chrono>

#include "comm/queued_communicator.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::inproc {

Group::Group(std::string name, int size)
    : name_(std::move(name)),
      size_(size),
      slots_(static_cast<size_t>(size)),
      here_(static_cast<size_t>(size), 0) {}

void Group::throwAbortedLocked(bool whileWaiting) const {
  if (!whileWaiting) {
    throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name_,
                           failureMessage_);
  }
  switch (failure_) {
    case Failure::Timeout: throw CommTimeoutError(failureMessage_);
    case Failure::Mismatch: throw CommMismatchError(failureMessage_);
    default: throw CommAbortedError(failureMessage_);
  }
}

void Group::arrive(int rank, Milliseconds timeout, const std::function<std::string()>& what) {
  std::unique_lock lock(mu_);
  if (failure_ != Failure::None) throwAbortedLocked(false);
  auto& here = here_[static_cast<size_t>(rank)];
  if (here) {
    const std::string msg = format(
        "{}: rank {} of group '{}' arrived twice (two threads use the same "
        "rank?)",
        what(), rank, name_);
    failure_ = Failure::Other;
    failureMessage_ = msg;
    cv_.notify_all();
    throw CommAbortedError(msg);
  }
  here = 1;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    std::fill(here_.begin(), here_.end(), 0);
    cv_.notify_all();
    return;
  }
  const uint64_t generation = generation_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (generation_ == generation && failure_ == Failure::None) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == generation &&
        failure_ == Failure::None) {
      std::vector<int> missing;
      for (int r = 0; r < size_; ++r) {
        if (!here_[static_cast<size_t>(r)]) missing.push_back(r);
      }
      const std::string msg = timeoutMessage(what(), name_, size_, timeout, missing);
      failure_ = Failure::Timeout;
      failureMessage_ = msg;
      cv_.notify_all();
      logging::comm::err("{}", msg);
      throw CommTimeoutError(msg);
    }
  }
  if (generation_ == generation) throwAbortedLocked(true);
}

void Group::abort(Failure kind, const std::string& message) {
  {
    std::lock_guard lock(mu_);
    if (failure_ != Failure::None) return;
    failure_ = kind;
    failureMessage_ = message;
  }
  cv_.notify_all();
}

void Group::throwIfAborted() const {
  std::lock_guard lock(mu_);
  if (failure_ != Failure::None) throwAbortedLocked(false);
}

std::shared_ptr<Group> Group::joinSplit(const std::string& key, int size,
                                        const std::string& childName) {
  std::lock_guard lock(mu_);
  auto& pending = splits_[key];
  if (!pending.group) pending.group = std::make_shared<Group>(childName, size);
  auto group = pending.group;
  if (++pending.joined == size) splits_.erase(key);
  return group;
}

bool Group::attach() {
  std::lock_guard lock(mu_);
  return ++attached_ == size_;
}

}  // namespace xtrain::comm::inproc
