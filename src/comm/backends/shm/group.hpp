// ShmGroup: one rank's view of a group's shared-memory segment: the layout, the epoch barrier
// (futex-based, so it works across processes and sleeps instead of spinning when cores are
// oversubscribed), dead-peer detection and the group-wide failure record.
#pragma once
#pragma GCC visibility push(default)

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/backends/shm/segment.hpp"
#include "comm/fingerprint.hpp"
#include "comm/types.hpp"

namespace xtrain::comm::shm {

using Clock = std::chrono::steady_clock;

// Segment layout: Header, then RankState[size], then the data area: two sets (alternating by round
// parity) of size+1 slots of slotBytes each (slot p belongs to rank p; slot `size` holds reduced
// results).
struct alignas(64) RankState {
  std::atomic<uint32_t> epoch;  // the last barrier epoch this rank reached
  std::atomic<int32_t> pid;     // 0 until the rank attached
  Fingerprint fingerprints[2];  // by collective sequence parity
  // Single-copy transfers (peer_memory.hpp). At join: the address of a word in this process's
  // memory and its value, which the peers try to read, and whether this rank could read every
  // peer's. Per all-reduce: this rank's input address, written before the first barrier and read
  // by the peers until the last one.
  uint64_t probeAddress;
  uint64_t probeValue;
  std::atomic<uint32_t> canReadPeers;
  uint64_t inputAddress;
  // By collective sequence parity: the shared memory (Communicator::allocateShared) an in-place
  // all-reduce works on, as the memory's number (0: none) and the buffer's offset in this rank's
  // part; written before the first barrier, compared by every rank after it.
  struct SharedUse {
    uint64_t memory;
    uint64_t offset;
  } sharedUse[2];
};

enum class Failure : uint32_t { None = 0, Timeout = 1, Mismatch = 2, PeerLost = 3, Transfer = 4 };

struct alignas(64) Header {
  uint64_t magic;
  uint32_t version;
  int32_t size;
  uint64_t slotBytes;
  uint64_t totalBytes;
  alignas(64) std::atomic<uint32_t> wakeWord;  // bumped by each barrier's last arrival and by
                                               // fail(); the futex sleepers wait on it
  std::atomic<uint32_t> sleepers;
  alignas(64) std::atomic<uint32_t> failureClaimed;  // the first failing rank sets it to 1
  std::atomic<uint32_t> failure;                     // Failure, published after the message
  char failureMessage[1024];
};

class ShmGroup {
 public:
  // Rank 0 creates and initialises a segment of the given slot size; the others open it by name.
  static ShmGroup create(const std::string& segmentName, std::string groupName, int size,
                         size_t slotBytes);
  static ShmGroup open(const std::string& segmentName, std::string groupName, int rank, int size);

  ShmGroup(ShmGroup&&) noexcept = default;
  ShmGroup& operator=(ShmGroup&&) noexcept = default;

  // Records this rank's pid; called once, before the first barrier.
  void attach(int rank);
  // Removes the segment's name once every rank has mapped it.
  void unlinkName() { segment_.unlink(); }

  const std::string& name() const { return name_; }
  int size() const { return size_; }
  size_t slotBytes() const { return slotBytes_; }

  char* slot(uint64_t round, int owner) const;
  char* resultSlot(uint64_t round) const { return slot(round, size_); }
  RankState& rankState(int r) const { return ranks_[r]; }

  // Barrier number `epoch` (1, 2, ... in the same order on every rank): publishes this rank's
  // arrival, then waits until every rank reached it. Throws (after recording the failure for
  // everyone) CommTimeoutError at `deadline` naming the ranks that did not arrive, and
  // CommPeerLostError when a missing rank's process is gone; throws the recorded failure when
  // another rank failed first. `what` describes the collective for messages.
  void arrive(int rank, uint32_t epoch, Clock::time_point deadline, Milliseconds limit,
              const std::function<std::string()>& what);

  // Records the group's first failure and wakes every sleeper.
  void fail(Failure kind, const std::string& message);
  // Throws the recorded failure (as CommAbortedError when `asAborted`, else by its kind).
  void throwIfFailed(bool asAborted) const;

 private:
  ShmGroup(SharedSegment segment, std::string groupName, int size);
  bool everyoneReached(uint32_t epoch) const;
  std::vector<int> missing(uint32_t epoch) const;
  void checkPeersAlive(uint32_t epoch, const std::function<std::string()>& what);

  SharedSegment segment_;
  std::string name_;
  int size_ = 0;
  size_t slotBytes_ = 0;
  Header* header_ = nullptr;
  RankState* ranks_ = nullptr;
  char* data_ = nullptr;
  bool spin_ = false;  // spin briefly before sleeping (only when every rank can have a core)
};

// Total segment bytes for a group of `size` ranks with `slotBytes` slots.
size_t segmentBytes(int size, size_t slotBytes);

}  // namespace xtrain::comm::shm

#pragma GCC visibility pop
