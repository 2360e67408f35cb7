// InprocTransport: one rank (thread) of an inproc group, under a QueuedCommunicator (which runs
// the collectives in issue order on its executor; blocking ones on the caller's thread when
// nothing else is queued).
//
// Every collective is two barriers around a compute phase:
//   1. publish (fingerprint, src, dst) in this rank's slot; arrival barrier; compare every slot's
//      fingerprint with rank 0's;
//   2. compute straight from/into the peers' buffers, each rank owning a disjoint part of the
//      result (a slice of an all-reduce, its own shard of a reduce-scatter, its own output
//      otherwise);
//   3. departure barrier: after it, no rank touches another's buffers, so each may return.
// All-reduce is a reduce-scatter and an all-gather fused: rank r reduces slice r of all inputs and
// writes it to every rank's output, so each byte is read once and written once per rank with no
// locking per element.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "comm/backends/inproc/group.hpp"
#include "comm/backends/inproc/inproc.hpp"
#include "comm/queued_communicator.hpp"
#include "comm/reduce.hpp"
#include "common/check.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::inproc {

namespace {

const std::string kBackendName = "inproc";

size_t sliceBegin(size_t n, size_t k, size_t r) {
  return (n / k) * r + std::min(r, n % k);
}

// All-reduces of at least this many bytes write the outputs with non-temporal stores when every
// rank reduces out of place: an output line is then written without being read first (no
// read-for-ownership), which at 64 MB more than doubled the bandwidth of 2 threads
// (docs/performance-history.md, "Session 8 re-measurement"). In place, the lines were just read, so
// ordinary stores hit the cache; below the bound the outputs stay cached for their next reader.
constexpr size_t kStreamingBytes = size_t{8} << 20;

char* bytePtr(void* p, size_t offset) {
  return static_cast<char*>(p) + offset;
}
const char* bytePtr(const void* p, size_t offset) {
  return static_cast<const char*>(p) + offset;
}

class InprocTransport : public Transport {
 public:
  InprocTransport(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}

  // Waits until every member of this (new) group exists; `what` describes the join for messages.
  void join(Milliseconds timeout, const std::string& what) {
    group_->wait(rank_, timeout, [&] { return what; });
  }

  void execute(QueuedCommunicator& comm, const Collective& c) override;
  std::shared_ptr<Communicator> split(QueuedCommunicator& comm, const SplitRequest& r) override;

 private:
  void checkFingerprints(QueuedCommunicator& comm);
  void compute(const Collective& c, void* reduceScatterTarget);

  std::shared_ptr<Group> group_;
  const int rank_;
};

// This rank's communicator of `group`, once every member joined.
std::shared_ptr<Communicator> makeCommunicator(std::shared_ptr<Group> group, int rank,
                                               Milliseconds timeout, const std::string& what) {
  auto transport = std::make_unique<InprocTransport>(group, rank);
  transport->join(timeout, what);
  return std::make_shared<QueuedCommunicator>(
      GroupInfo{kBackendName, group->name(), rank, group->size(), timeout, true},
      std::move(transport));
}

void InprocTransport::execute(QueuedCommunicator& comm, const Collective& t) {
  const Fingerprint& f = t.fingerprint;
  const size_t es = f.kind == OpKind::Barrier ? 0 : dataTypeSize(f.type);
  const bool inPlace = t.input.data == t.output.data;
  auto what = [&] { return t.what; };

  // Buffers this rank publishes. In-place all-gather publishes a copy of its shard (its buffer is
  // overwritten while peers read); in-place reduce-scatter reduces into a private shard (its
  // buffer's start is some peer's input).
  std::vector<char> scratch;
  const void* src = t.input.data;
  void* rsTarget = t.output.data;
  if (inPlace && f.kind == OpKind::AllGather) {
    scratch.assign(bytePtr(t.input.data, 0), bytePtr(t.input.data, t.input.count * es));
    src = scratch.data();
  } else if (inPlace && f.kind == OpKind::ReduceScatter) {
    scratch.resize(t.output.count * es);
    rsTarget = scratch.data();
  }

  // A rank that failed (mismatch, timeout) aborted the group before throwing, and a failed group
  // refuses arrivals before it takes their slots: no rank rewrites its slot while a peer may still
  // be reading it to report that failure.
  group_->arrive(rank_, Slot{f, src, t.output.data}, t.timeout, what);
  checkFingerprints(comm);
  compute(t, rsTarget);
  group_->wait(rank_, t.timeout, [&] { return what() + " (departure)"; });
  if (inPlace && f.kind == OpKind::ReduceScatter && !scratch.empty()) {
    std::memcpy(t.output.data, scratch.data(), scratch.size());
  }
}

void InprocTransport::checkFingerprints(QueuedCommunicator& comm) {
  if (auto msg = comm.disagreement(
          [&](int p) -> const Fingerprint& { return group_->slot(p).fingerprint; })) {
    group_->abort(Group::Failure::Mismatch, *msg);
    comm.fail(FailureKind::Mismatch, *msg);
  }
}

void InprocTransport::compute(const Collective& t, void* rsTarget) {
  const Fingerprint& f = t.fingerprint;
  const auto slots = [this](size_t p) -> const Slot& { return group_->slot(static_cast<int>(p)); };
  const size_t k = static_cast<size_t>(group_->size());
  const size_t r = static_cast<size_t>(rank_);
  const size_t n = f.count;
  switch (f.kind) {
    case OpKind::Barrier: return;
    case OpKind::AllReduce: {
      const size_t es = dataTypeSize(f.type);
      if (f.op == CollectiveOperator::Local) {
        if (t.input.data != t.output.data && n > 0)
          std::memcpy(t.output.data, t.input.data, n * es);
        return;
      }
      const size_t begin = sliceBegin(n, k, r);
      const size_t len = sliceBegin(n, k, r + 1) - begin;
      if (len == 0) return;
      std::vector<const void*> srcs(k);
      std::vector<void*> dsts(k);
      bool outOfPlace = true;
      for (size_t p = 0; p < k; ++p) {
        srcs[p] = bytePtr(slots(p).src, begin * es);
        dsts[p] = bytePtr(slots(p).dst, begin * es);
        outOfPlace = outOfPlace && slots(p).src != slots(p).dst;
      }
      reduceInto(f.type, f.op, srcs.data(), k, dsts.data(), k, len,
                 outOfPlace && n * es >= kStreamingBytes);
      return;
    }
    case OpKind::ReduceScatter: {
      const size_t es = dataTypeSize(f.type);
      const size_t s = shardCount(n, k);
      const size_t begin = r * s;
      const size_t valid = begin < n ? std::min(s, n - begin) : 0;
      if (valid > 0) {
        if (f.op == CollectiveOperator::Local) {
          std::memmove(rsTarget, bytePtr(t.input.data, begin * es), valid * es);
        } else {
          std::vector<const void*> srcs(k);
          for (size_t p = 0; p < k; ++p) srcs[p] = bytePtr(slots(p).src, begin * es);
          reduceInto(f.type, f.op, srcs.data(), k, &rsTarget, 1, valid);
        }
      }
      if (s > valid) std::memset(bytePtr(rsTarget, valid * es), 0, (s - valid) * es);
      return;
    }
    case OpKind::AllGather: {
      const size_t es = dataTypeSize(f.type);
      const size_t s = shardCount(n, k);
      for (size_t p = 0; p < k; ++p) {
        const size_t begin = p * s;
        const size_t valid = begin < n ? std::min(s, n - begin) : 0;
        if (valid > 0) std::memcpy(bytePtr(t.output.data, begin * es), slots(p).src, valid * es);
      }
      return;
    }
    case OpKind::Broadcast: {
      const size_t es = dataTypeSize(f.type);
      const void* from = slots(static_cast<size_t>(f.root)).src;
      if (n > 0 && from != t.output.data) std::memcpy(t.output.data, from, n * es);
      return;
    }
  }
}

std::shared_ptr<Communicator> InprocTransport::split(QueuedCommunicator& comm,
                                                     const SplitRequest& r) {
  group_->throwIfAborted();
  auto child = group_->joinSplit(r.identity, static_cast<int>(r.ranks.size()), r.childName);
  return makeCommunicator(child, r.newRank, comm.timeout(), r.what);
}

// Process-wide table of the groups being created, by id; an entry lives until every rank attached.
struct PendingGroups {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Group>> groups;
  uint64_t next = 0;
};
PendingGroups& pendingGroups() {
  static PendingGroups* p = new PendingGroups;
  return *p;
}

}  // namespace

std::shared_ptr<Communicator> createCommunicator(const CommConfig& c) {
  const Milliseconds timeout = c.timeout ? *c.timeout : defaultTimeout();
  const std::string key = "inproc/" + c.name;
  auto& pending = pendingGroups();
  std::shared_ptr<Group> group;
  if (c.rank == 0) {
    if (c.store->add(key + "/created", 1) != 1) {
      throw error(
          "inproc: a group named '{}' was already created with this store (job '{}'); give "
          "each communicator its own name or store",
          c.name, c.store->jobId());
    }
    group = std::make_shared<Group>(c.name, c.size);
    std::string id;
    {
      std::lock_guard lock(pending.mu);
      id = std::to_string(::getpid()) + ":" + std::to_string(pending.next++);
      pending.groups[id] = group;
    }
    c.store->set(key + "/id", id);
  } else {
    std::string id;
    try {
      id = c.store->get(key + "/id", timeout);
    } catch (const CommTimeoutError& e) {
      throw CommTimeoutError(
          "inproc: rank {} timed out after {} ms waiting for rank 0 to create group "
          "'{}' (size {}): {}",
          c.rank, timeout.count(), c.name, c.size, e.what());
    }
    {
      std::lock_guard lock(pending.mu);
      auto it = pending.groups.find(id);
      if (it != pending.groups.end()) group = it->second;
    }
    if (!group) {
      throw error(
          "inproc: group '{}' (id {}) was not created in this process (pid {}); inproc ranks "
          "must be threads of one process (use another backend for processes)",
          c.name, id, ::getpid());
    }
    if (group->size() != c.size) {
      throw error(
          "inproc: rank {} joins group '{}' with size {}, but rank 0 created it with size {}",
          c.rank, c.name, c.size, group->size());
    }
  }
  if (group->attach()) {
    std::lock_guard lock(pending.mu);
    for (auto it = pending.groups.begin(); it != pending.groups.end(); ++it) {
      if (it->second == group) {
        pending.groups.erase(it);
        break;
      }
    }
  }
  return makeCommunicator(group, c.rank, timeout, format("creation of group '{}'", c.name));
}

}  // namespace xtrain::comm::inproc
