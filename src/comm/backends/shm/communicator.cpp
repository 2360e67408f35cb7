// ShmTransport: one rank of a shm group, under a QueuedCommunicator (which runs the collectives
// in issue order). Data moves through the group's shared-memory segment in rounds of at most one
// slot per rank (see group.hpp):
//   1. each rank copies its part of the round into its own slot;
//   2. barrier (the first one of a collective also compares every rank's fingerprint);
//   3. each rank reads what it needs from the peers' slots.
// Slots alternate between two sets by round parity, so a round's writes never race the previous
// round's reads: a rank can only write set s again after the next round's barrier, which every rank
// passes only once it finished reading set s.
// All-reduce of a large buffer adds a reduce-scatter step: rank r reduces slice r of every slot
// into the round's result slot (and its own output); after the next round's barrier (or a final
// one) every rank copies the other slices of the result, so a round still costs one barrier. Every
// element is reduced once, by one rank, in rank order, so all ranks end with bitwise-identical
// results. Small all-reduces (up to kDirectBytes) are one round that every rank reduces whole, in
// the same order.
// Single copy (opt-in, XTRAIN_SHM_SINGLE_COPY=1; used only when every rank may read its peers'
// memory with process_vm_readv, probed when the group is created): an all-reduce of at least
// kSingleCopyBytes skips the copy into the slots. Each rank publishes its input's address; in
// each round rank r reads slice r of every peer's input straight into a cache-sized scratch and
// reduces it into the result slot and its output; the copy out of the result slot is as above.
// Same slices, same rank order: bitwise the same results as the slot path. Where the kernel
// refuses (Yama's ptrace_scope, a seccomp filter) the group keeps the slots.
// Shared memory (Communicator::allocateShared, shared_memory.hpp): an in-place all-reduce of a
// buffer in it needs no slots: after a barrier rank r reduces slice r of the n elements from every
// rank's part straight into every rank's part, and a second barrier ends it. Per rank that is one
// read and one write of n elements, against about four passes through the slots. Every rank must
// reduce the same shared buffer (checked at the first barrier); same slices and rank order per
// element: bitwise the results of the slot path.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/backends/shm/group.hpp"
#include "comm/backends/shm/peer_memory.hpp"
#include "comm/backends/shm/shared_memory.hpp"
#include "comm/backends/shm/shm.hpp"
#include "comm/host.hpp"
#include "comm/queued_communicator.hpp"
#include "comm/reduce.hpp"
#include "common/env_switch.hpp"
#include "common/env_value.hpp"
#include "common/usable_cpus.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::shm {

namespace {

const std::string kBackendName = "shm";
// Measured on 2 cores (docs/performance.md): 4 MiB slots halve the barrier count of a 4 MB
// all-reduce and win when every rank has a core; oversubscribed groups do better with 1 MiB, whose
// rounds fit the caches of the rank that is running.
constexpr size_t kSlotBytesOneCoreEach = size_t{4} << 20;
constexpr size_t kSlotBytesOversubscribed = size_t{1} << 20;
constexpr size_t kDirectBytes = size_t{16} << 10;
// Smaller single-copy all-reduces would pay a system call per peer and chunk to save copies of a
// few pages: they keep the slots.
constexpr size_t kSingleCopyBytes = size_t{256} << 10;
// Bytes of each peer's slice read per step of a single-copy reduction: the peers' chunks and this
// rank's input stay in the core's cache while they are reduced.
constexpr size_t kScratchBytes = size_t{256} << 10;

// XTRAIN_SHM_SLOT_BYTES: bytes per rank per round (rank 0's value is used by the whole group);
// by default 4 MiB when each of the group's `size` ranks can have a core, else 1 MiB.
size_t slotBytesFromEnvironment(int size) {
  const auto text = readEnvString("XTRAIN_SHM_SLOT_BYTES");
  if (!text) {
    return size <= usableCpus() ? kSlotBytesOneCoreEach : kSlotBytesOversubscribed;
  }
  const uint64_t v = parseByteCount(*text, "XTRAIN_SHM_SLOT_BYTES", 4096, uint64_t{1} << 30);
  if (v % 64 != 0) {
    throwBadValue("XTRAIN_SHM_SLOT_BYTES", *text,
                  "a byte count from 4096 to 1073741824 that is a multiple of 64");
  }
  return static_cast<size_t>(v);
}

// xrun unlinks a killed job's leftovers by this form (launcher/restart_policy.cpp).
std::string segmentName(const std::string& jobId) {
  static std::atomic<uint64_t> counter{0};
  std::string safe;
  for (char c : jobId.substr(0, 48)) {
    safe += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_') ? c : '_';
  }
  return format("/xtrain-{}-{}-{}", safe, ::getpid(), counter.fetch_add(1));
}

size_t clip(size_t begin, size_t len, size_t n) {
  return begin >= n ? 0 : std::min(len, n - begin);
}

size_t sliceBegin(size_t n, size_t k, size_t r) {
  return (n / k) * r + std::min(r, n % k);
}

char* at(void* p, size_t elems, size_t es) {
  return static_cast<char*>(p) + elems * es;
}
const char* at(const void* p, size_t elems, size_t es) {
  return static_cast<const char*>(p) + elems * es;
}

// A large all-reduce's round whose result slot still holds the slices this rank copies out: [0, b)
// and [e, m) of the m elements at `off` (this rank's own slice [b, e) went to its output directly).
// Copied after the next round's barrier, so that each round costs one barrier.
struct PendingCopyOut {
  uint64_t round;
  size_t off, m, b, e;
  void copy(const ShmGroup& group, void* output, size_t es) const {
    const char* result = group.resultSlot(round);
    void* out = at(output, off, es);
    if (b > 0) std::memcpy(out, result, b * es);
    if (e < m) std::memcpy(at(out, e, es), at(result, e, es), (m - e) * es);
  }
};

class ShmTransport : public Transport {
 public:
  ShmTransport(ShmGroup group, int rank, std::shared_ptr<Store> keySpace)
      : group_(std::move(group)), rank_(rank), keySpace_(std::move(keySpace)) {}

  // The first barrier of a new group: every rank attached. Rank 0 then removes the segment's name,
  // so nothing is left in /dev/shm whatever happens later.
  // Then every rank tries to read a word of each peer's memory, and the group uses single-copy
  // transfers only if every rank could (a second barrier shares the answers).
  void join(Milliseconds timeout, const std::string& what) {
    const auto deadline = Clock::now() + timeout;
    RankState& mine = group_.rankState(rank_);
    probeWord_ = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(::getpid()) ^
                 reinterpret_cast<uintptr_t>(this);
    mine.probeAddress = reinterpret_cast<uintptr_t>(&probeWord_);
    mine.probeValue = probeWord_;
    group_.attach(rank_);
    group_.arrive(rank_, ++epoch_, deadline, timeout, [&] { return what; });
    if (rank_ == 0) group_.unlinkName();
    bool canRead = singleCopyWanted(rank_);
    for (int p = 0; p < size() && canRead; ++p) {
      if (p == rank_) continue;
      const RankState& peer = group_.rankState(p);
      canRead = canReadPeer(peer.pid.load(std::memory_order_acquire),
                            reinterpret_cast<const void*>(peer.probeAddress), &peer.probeValue,
                            sizeof(peer.probeValue));
    }
    mine.canReadPeers.store(canRead ? 1 : 0, std::memory_order_release);
    group_.arrive(rank_, ++epoch_, deadline, timeout, [&] { return what; });
    singleCopy_ = true;
    for (int p = 0; p < size(); ++p) {
      if (group_.rankState(p).canReadPeers.load(std::memory_order_acquire) == 0)
        singleCopy_ = false;
    }
    if (!singleCopy_ && rank_ == 0 && size() > 1) {
      logging::comm::debug(
          "shm: group '{}' moves data through the shared segment (single-copy reads "
          "between its processes are off or not allowed)",
          group_.name());
    }
  }

  void execute(QueuedCommunicator& comm, const Collective& c) override;
  std::shared_ptr<Communicator> split(QueuedCommunicator& comm, const SplitRequest& r) override;
  std::shared_ptr<const SharedMemory> allocateShared(QueuedCommunicator& comm,
                                                     size_t bytes) override {
    group_.throwIfFailed(true);
    return shared_.allocate(*keySpace_, segmentName(keySpace_->jobId()), group_.name(), rank_,
                            size(), bytes, comm.timeout());
  }

 private:
  // What one running collective needs.
  struct Call {
    QueuedCommunicator& comm;
    const Collective& c;
    const Fingerprint& f;
    BufferView in;
    BufferView out;
    bool checked = false;                            // fingerprints compared (at the first barrier)
    std::optional<SharedMemoryTable::Found> shared;  // an in-place all-reduce in shared memory
  };

  void sync(Call& c);
  void allReduce(Call& c);
  void singleCopyAllReduce(Call& c);
  void sharedAllReduce(Call& c);
  // The first barrier's check that every rank reduces the same shared buffer (or none).
  void checkSharedUse(Call& c);
  // Reads `bytes` at `remote` in rank p's process into `local`; fails the group if it cannot.
  void readFromPeer(Call& c, int p, const void* remote, void* local, size_t bytes);
  void reduceScatter(Call& c);
  void allGather(Call& c);
  void broadcast(Call& c);
  int size() const { return group_.size(); }

  ShmGroup group_;
  const int rank_;
  std::shared_ptr<Store> keySpace_;  // this group's keys (for splits)

  // Executor-thread state: barrier epochs and data rounds, the same sequence on every rank.
  uint32_t epoch_ = 0;
  uint64_t round_ = 0;

  uint64_t probeWord_ = 0;     // read by the peers at join (their single-copy probe)
  bool singleCopy_ = false;    // every rank can read every peer's memory
  std::vector<char> scratch_;  // single-copy: the chunks read from the peers
  SharedMemoryTable shared_;   // allocateShared's memory
};

void ShmTransport::execute(QueuedCommunicator& comm, const Collective& collective) {
  Call c{comm, collective, collective.fingerprint, collective.input, collective.output, false, {}};
  group_.throwIfFailed(true);
  RankState& mine = group_.rankState(rank_);
  mine.fingerprints[c.f.seq & 1U] = c.f;
  if (c.f.kind == OpKind::AllReduce && c.f.op != CollectiveOperator::Local && c.f.count > 0 &&
      c.in.data == c.out.data) {
    c.shared = shared_.find(c.in.data, c.f.count * dataTypeSize(c.f.type), rank_);
  }
  mine.sharedUse[c.f.seq & 1U] =
      c.shared ? RankState::SharedUse{c.shared->mapping->number, c.shared->offset}
               : RankState::SharedUse{0, 0};
  switch (c.f.kind) {
    case OpKind::Barrier: sync(c); return;
    case OpKind::AllReduce: c.shared ? sharedAllReduce(c) : allReduce(c); return;
    case OpKind::ReduceScatter: reduceScatter(c); return;
    case OpKind::AllGather: allGather(c); return;
    case OpKind::Broadcast: broadcast(c); return;
  }
}

// A barrier of the running collective; the first one also checks that every rank issued the same
// collective (each rank wrote its fingerprint before arriving).
void ShmTransport::sync(Call& c) {
  group_.arrive(rank_, ++epoch_, c.c.deadline, c.c.timeout, [&] { return c.c.what; });
  if (c.checked) return;
  c.checked = true;
  const size_t parity = c.f.seq & 1U;
  if (auto msg = c.comm.disagreement(
          [&](int p) -> const Fingerprint& { return group_.rankState(p).fingerprints[parity]; })) {
    group_.fail(Failure::Mismatch, *msg);
    c.comm.fail(FailureKind::Mismatch, *msg);
  }
  checkSharedUse(c);
}

void ShmTransport::checkSharedUse(Call& c) {
  const size_t parity = c.f.seq & 1U;
  const auto describe = [](const RankState::SharedUse& u) {
    return u.memory == 0 ? std::string("a buffer of its own")
                         : format("shared memory {} at offset {}", u.memory, u.offset);
  };
  const RankState::SharedUse& mine = group_.rankState(rank_).sharedUse[parity];
  for (int p = 0; p < size(); ++p) {
    const RankState::SharedUse& theirs = group_.rankState(p).sharedUse[parity];
    if (theirs.memory == mine.memory && theirs.offset == mine.offset) continue;
    const std::string msg = format(
        "{} in group '{}' (size {}): rank {} reduces {} in place, but rank {} reduces {}; every "
        "rank must place the buffer at the same offset of the same allocateShared memory, or "
        "none",
        c.c.what, group_.name(), size(), rank_, describe(mine), p, describe(theirs));
    group_.fail(Failure::Mismatch, msg);
    c.comm.fail(FailureKind::Mismatch, msg);
  }
}

void ShmTransport::sharedAllReduce(Call& c) {
  const size_t es = dataTypeSize(c.f.type);
  const size_t n = c.f.count;
  const auto k = static_cast<size_t>(size());
  const auto r = static_cast<size_t>(rank_);
  const SharedMapping& m = *c.shared->mapping;
  sync(c);  // every rank's buffer is complete; they all reduce the same shared buffer
  const size_t b = sliceBegin(n, k, r);
  const size_t e = sliceBegin(n, k, r + 1);
  if (e > b) {
    std::vector<const void*> srcs(k);
    std::vector<void*> dsts(k);
    for (size_t p = 0; p < k; ++p) {
      dsts[p] = at(m.part(static_cast<int>(p)) + c.shared->offset, b, es);
      srcs[p] = dsts[p];
    }
    reduceInto(c.f.type, c.f.op, srcs.data(), k, dsts.data(), k, e - b);
  }
  sync(c);  // every slice is in every rank's buffer; nobody reads this rank's part any more
}

void ShmTransport::allReduce(Call& c) {
  const size_t es = dataTypeSize(c.f.type);
  const size_t n = c.f.count;
  const auto k = static_cast<size_t>(size());
  if (c.f.op == CollectiveOperator::Local) {
    sync(c);
    if (c.in.data != c.out.data && n > 0) std::memcpy(c.out.data, c.in.data, n * es);
    return;
  }
  if (singleCopy_ && k > 1 && n * es >= kSingleCopyBytes) {
    singleCopyAllReduce(c);
    return;
  }
  const size_t slotElems = group_.slotBytes() / es;
  const auto r = static_cast<size_t>(rank_);
  std::vector<const void*> srcs(k);
  if (n * es <= kDirectBytes) {
    // Small: one round, every rank reduces all of it (in rank order, so the results agree).
    const uint64_t round = round_++;
    if (n > 0) std::memcpy(group_.slot(round, rank_), c.in.data, n * es);
    sync(c);
    if (n == 0) return;
    for (size_t p = 0; p < k; ++p) srcs[p] = group_.slot(round, static_cast<int>(p));
    reduceInto(c.f.type, c.f.op, srcs.data(), k, &c.out.data, 1, n);
    return;
  }
  // Large: rank r reduces slice r of each round into the round's result slot (and its output); the
  // other slices are copied out of the result slot after the next round's barrier (or a final
  // one), so each round costs one barrier.
  std::optional<PendingCopyOut> pending;
  std::vector<const void*> slice(k);
  for (size_t off = 0; off < n;) {
    const size_t m = std::min(slotElems, n - off);
    const uint64_t round = round_++;
    const char* in = at(c.in.data, off, es);
    // This rank's slice of the round: peers never read it from the slot (it is reduced here, from
    // the input).
    const size_t b = sliceBegin(m, k, r);
    const size_t e = sliceBegin(m, k, r + 1);
    char* mine = group_.slot(round, rank_);
    if (b > 0) std::memcpy(mine, in, b * es);
    if (m > e) std::memcpy(at(mine, e, es), at(in, e, es), (m - e) * es);
    sync(c);  // also: every rank finished reducing the previous round
    if (pending) pending->copy(group_, c.out.data, es);
    if (e > b) {
      for (size_t p = 0; p < k; ++p) slice[p] = at(group_.slot(round, static_cast<int>(p)), b, es);
      slice[r] = at(in, b, es);
      void* dsts[2] = {at(group_.resultSlot(round), b, es), at(c.out.data, off + b, es)};
      reduceInto(c.f.type, c.f.op, slice.data(), k, dsts, 2, e - b);
    }
    pending = PendingCopyOut{round, off, m, b, e};
    off += m;
  }
  sync(c);
  pending->copy(group_, c.out.data, es);
}

void ShmTransport::readFromPeer(Call& c, int p, const void* remote, void* local, size_t bytes) {
  bool gone = false;
  const std::string why =
      readPeer(group_.rankState(p).pid.load(std::memory_order_acquire), remote, local, bytes, gone);
  if (why.empty()) return;
  const std::string msg =
      format("{} in group '{}' (size {}): reading rank {}'s buffer failed: {}", c.c.what,
             group_.name(), size(), p, gone ? "its process is gone" : why);
  group_.fail(gone ? Failure::PeerLost : Failure::Transfer, msg);
  if (gone) throw CommPeerLostError(msg);
  throw CommAbortedError(msg);
}

void ShmTransport::singleCopyAllReduce(Call& c) {
  const size_t es = dataTypeSize(c.f.type);
  const size_t n = c.f.count;
  const auto k = static_cast<size_t>(size());
  const auto r = static_cast<size_t>(rank_);
  RankState& mine = group_.rankState(rank_);
  mine.inputAddress = reinterpret_cast<uintptr_t>(c.in.data);
  sync(c);  // every rank's input address is published; fingerprints agree

  const size_t chunkElems = std::max<size_t>(64, kScratchBytes / es);
  if (scratch_.size() < (k - 1) * chunkElems * es + 64)
    scratch_.resize((k - 1) * chunkElems * es + 64);
  char* scratch = scratch_.data() + (64 - reinterpret_cast<uintptr_t>(scratch_.data()) % 64) % 64;
  std::vector<const void*> srcs(k);
  std::optional<PendingCopyOut> pending;
  const size_t slotElems = group_.slotBytes() / es;
  for (size_t off = 0; off < n;) {
    const size_t m = std::min(slotElems, n - off);
    const uint64_t round = round_++;
    if (pending) {
      sync(c);  // every rank finished reducing the previous round
      pending->copy(group_, c.out.data, es);
    }
    const size_t b = sliceBegin(m, k, r);
    const size_t e = sliceBegin(m, k, r + 1);
    for (size_t j = b; j < e; j += chunkElems) {
      const size_t len = std::min(chunkElems, e - j);
      char* buffer = scratch;
      for (size_t p = 0; p < k; ++p) {
        if (p == r) {
          srcs[p] = at(c.in.data, off + j, es);
          continue;
        }
        const auto* peerIn =
            reinterpret_cast<const void*>(group_.rankState(static_cast<int>(p)).inputAddress);
        readFromPeer(c, static_cast<int>(p), at(peerIn, off + j, es), buffer, len * es);
        srcs[p] = buffer;
        buffer += chunkElems * es;
      }
      void* dsts[2] = {at(group_.resultSlot(round), j, es), at(c.out.data, off + j, es)};
      reduceInto(c.f.type, c.f.op, srcs.data(), k, dsts, 2, len);
    }
    pending = PendingCopyOut{round, off, m, b, e};
    off += m;
  }
  sync(c);  // every round is reduced; no rank reads this rank's buffers any more
  pending->copy(group_, c.out.data, es);
}

void ShmTransport::reduceScatter(Call& c) {
  const size_t es = dataTypeSize(c.f.type);
  const size_t n = c.f.count;
  const auto k = static_cast<size_t>(size());
  const auto r = static_cast<size_t>(rank_);
  const size_t s = shardCount(n, k);
  if (c.f.op == CollectiveOperator::Local) {
    sync(c);
    const size_t valid = clip(r * s, s, n);
    if (valid > 0) std::memmove(c.out.data, at(c.in.data, r * s, es), valid * es);
    if (s > valid) std::memset(at(c.out.data, valid, es), 0, (s - valid) * es);
    return;
  }
  // Each round carries, per rank, piece p of every destination shard p.
  const size_t pieceElems = std::max<size_t>(1, group_.slotBytes() / (es * k));
  std::vector<const void*> srcs(k);
  size_t j = 0;
  do {
    const size_t m = std::min(pieceElems, s - j);
    const uint64_t round = round_++;
    char* mine = group_.slot(round, rank_);
    for (size_t p = 0; p < k; ++p) {
      const size_t valid = clip(p * s + j, m, n);
      if (valid > 0) std::memcpy(at(mine, p * m, es), at(c.in.data, p * s + j, es), valid * es);
    }
    sync(c);
    const size_t valid = clip(r * s + j, m, n);
    if (valid > 0) {
      for (size_t p = 0; p < k; ++p)
        srcs[p] = at(group_.slot(round, static_cast<int>(p)), r * m, es);
      void* out = at(c.out.data, j, es);
      reduceInto(c.f.type, c.f.op, srcs.data(), k, &out, 1, valid);
    }
    if (m > valid) std::memset(at(c.out.data, j + valid, es), 0, (m - valid) * es);
    j += m;
  } while (j < s);
}

void ShmTransport::allGather(Call& c) {
  const size_t es = dataTypeSize(c.f.type);
  const size_t n = c.f.count;
  const auto k = static_cast<size_t>(size());
  const size_t s = shardCount(n, k);
  const size_t slotElems = group_.slotBytes() / es;
  size_t j = 0;
  do {
    const size_t m = std::min(slotElems, s - j);
    const uint64_t round = round_++;
    if (m > 0) std::memcpy(group_.slot(round, rank_), at(c.in.data, j, es), m * es);
    sync(c);
    for (size_t p = 0; p < k; ++p) {
      const size_t valid = clip(p * s + j, m, n);
      if (valid > 0) {
        std::memcpy(at(c.out.data, p * s + j, es), group_.slot(round, static_cast<int>(p)),
                    valid * es);
      }
    }
    j += m;
  } while (j < s);
}

void ShmTransport::broadcast(Call& c) {
  const size_t es = dataTypeSize(c.f.type);
  const size_t n = c.f.count;
  const int root = c.f.root;
  const size_t slotElems = group_.slotBytes() / es;
  size_t off = 0;
  do {
    const size_t m = std::min(slotElems, n - off);
    const uint64_t round = round_++;
    if (rank_ == root && m > 0) {
      std::memcpy(group_.slot(round, root), at(c.in.data, off, es), m * es);
    }
    sync(c);
    if (m > 0) {
      if (rank_ != root) {
        std::memcpy(at(c.out.data, off, es), group_.slot(round, root), m * es);
      } else if (c.in.data != c.out.data) {
        std::memcpy(at(c.out.data, off, es), at(c.in.data, off, es), m * es);
      }
    }
    off += m;
  } while (off < n);
}

// Creates (rank 0) or opens (the others) the group's segment and waits for every rank; `joinWhat`
// names the creation in timeout messages.
std::shared_ptr<Communicator> build(const std::shared_ptr<Store>& keySpace,
                                    const std::string& groupName, int rank, int size,
                                    Milliseconds timeout, const std::string& joinWhat) {
  std::optional<ShmGroup> group;
  if (rank == 0) {
    if (keySpace->add("created", 1) != 1) {
      throw error(
          "shm: a group named '{}' was already created with this store (job '{}'); give each "
          "communicator its own name or store",
          groupName, keySpace->jobId());
    }
    const std::string segment = segmentName(keySpace->jobId());
    group.emplace(ShmGroup::create(segment, groupName, size, slotBytesFromEnvironment(size)));
    keySpace->set("segment", segment + "\n" + hostIdentity());
  } else {
    std::string published;
    try {
      published = keySpace->get("segment", timeout);
    } catch (const CommTimeoutError& e) {
      throw CommTimeoutError(
          "shm: rank {} timed out after {} ms waiting for rank 0 to create group '{}' (size {}): "
          "{}",
          rank, timeout.count(), groupName, size, e.what());
    }
    const auto newline = published.find('\n');
    const std::string segment = published.substr(0, newline);
    const std::string host = newline == std::string::npos ? "" : published.substr(newline + 1);
    if (host != hostIdentity()) {
      throw error(
          "shm: every rank of group '{}' must run on one host, but rank {} runs on {} and rank 0 "
          "on {}; use the gloo or mpi backend across hosts (XTRAIN_COMM_BACKEND)",
          groupName, rank, hostIdentity(), host);
    }
    group.emplace(ShmGroup::open(segment, groupName, rank, size));
  }
  auto transport = std::make_unique<ShmTransport>(std::move(*group), rank, keySpace);
  transport->join(timeout, joinWhat);
  return std::make_shared<QueuedCommunicator>(
      GroupInfo{kBackendName, groupName, rank, size, timeout, true}, std::move(transport));
}

std::shared_ptr<Communicator> ShmTransport::split(QueuedCommunicator& comm, const SplitRequest& r) {
  group_.throwIfFailed(true);
  return build(std::make_shared<PrefixStore>(keySpace_, "split/" + r.identity), r.childName,
               r.newRank, static_cast<int>(r.ranks.size()), comm.timeout(), r.what);
}

}  // namespace

std::shared_ptr<Communicator> createCommunicator(const CommConfig& c) {
  const Milliseconds timeout = c.timeout ? *c.timeout : defaultTimeout();
  return build(std::make_shared<PrefixStore>(c.store, "shm/" + c.name), c.name, c.rank, c.size,
               timeout, format("creation of group '{}'", c.name));
}

}  // namespace xtrain::comm::shm
