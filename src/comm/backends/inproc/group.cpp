#include "comm/backends/inproc/group.hpp"

#include "comm/queued_communicator.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::inproc {

Group::Group(std::string name, int size) : name_(std::move(name)), size_(size), rendezvous_(size) {}

RendezvousWait Group::waitFor(Milliseconds timeout,
                              const std::function<std::string()>& what) const {
  RendezvousWait w;
  w.timeout = timeout;
  w.twice = [this, &what](int rank) {
    return format("{}: rank {} of group '{}' arrived twice (two threads use the same rank?)",
                  what(), rank, name_);
  };
  w.timedOut = [this, &what, timeout](const std::vector<int>& missing) {
    std::string msg = timeoutMessage(what(), name_, size_, timeout, missing);
    logging::comm::err("{}", msg);
    return msg;
  };
  return w;
}

void Group::raise(const RendezvousFailure& f) const {
  if (f.earlier) {
    throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name_,
                           f.message);
  }
  switch (f.kind) {
    case Failure::Timeout: throw CommTimeoutError(f.message);
    case Failure::Mismatch: throw CommMismatchError(f.message);
    case Failure::Other: break;
  }
  throw CommAbortedError(f.message);
}

void Group::arrive(int rank, const Slot& slot, Milliseconds timeout,
                   const std::function<std::string()>& what) {
  if (auto failed = rendezvous_.arrive(rank, slot, waitFor(timeout, what))) raise(*failed);
}

void Group::wait(int rank, Milliseconds timeout, const std::function<std::string()>& what) {
  if (auto failed = rendezvous_.wait(rank, waitFor(timeout, what))) raise(*failed);
}

void Group::abort(Failure kind, const std::string& message) {
  rendezvous_.abort(kind, message);
}

void Group::throwIfAborted() const {
  if (auto failed = rendezvous_.failure()) raise(*failed);
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
