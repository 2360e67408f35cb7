// The collective trace file: the layout shared by its writer (comm/collective_trace.hpp, in every
// instance) and its reader (xrun's hang report, launcher/hang_report.hpp). Header-only and
// standard-library-only, so that xrun can read it without linking the comm library.
//
// One file per instance, `<XTRAIN_RENDEZVOUS_DIR>/collective-trace-<instance index>` (mode 0600),
// mapped by the instance: a Header, then kSlots Slots used as a ring. A collective takes the next
// slot when it starts running (entered) and updates it when it ends (finished or failed). Each slot
// is a seqlock: `version` is odd while the writer changes the slot; a reader copies the slot and
// keeps the copy only when `version` was even and unchanged around the copy. Times are
// CLOCK_MONOTONIC_COARSE nanoseconds: CLOCK_MONOTONIC's time line (the same in every process of a
// host) at the kernel's tick resolution, a few milliseconds.
#pragma once
#pragma GCC visibility push(default)

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

namespace xtrain::comm::trace {

inline constexpr char kMagic[8] = {'X', 'T', 'R', 'C', 'O', 'L', 'L', '1'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kSlots = 256;
inline constexpr const char* kFilePrefix = "collective-trace-";
// The op of a communicator's creation (the rendezvous of its members, comm/backend.hpp's
// createCommunicator), recorded with sequence number 0 before its collectives: a member that never
// arrives there leaves the others waiting in it.
inline constexpr const char* kCreateOp = "create";

enum class State : uint32_t { Empty = 0, Entered = 1, Finished = 2, Failed = 3 };

// How a failed collective failed (comm/queued_communicator.hpp's FailureKind, plus None).
enum class Failure : uint32_t { None = 0, Timeout, Mismatch, PeerLost, Aborted, Other };

inline const char* toString(Failure f) {
  switch (f) {
    case Failure::None: return "none";
    case Failure::Timeout: return "timed out";
    case Failure::Mismatch: return "mismatch";
    case Failure::PeerLost: return "peer lost";
    case Failure::Aborted: return "aborted after an earlier failure";
    case Failure::Other: return "failed";
  }
  return "?";
}

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t slots;
  int32_t instance;
  int32_t pid;
  uint64_t claims;  // slots claimed so far (atomic): the next collective takes claims % slots
  int64_t createdNs;
  char reserved[24];
};
static_assert(sizeof(Header) == 64);

struct Slot {
  uint64_t version;  // seqlock (atomic)
  uint64_t ticket;   // the claim that wrote this slot (claims before it)
  uint64_t seq;      // the collective's sequence number in its group
  uint64_t bytes;    // the data it moves on this rank (count x element size)
  int64_t startNs;   // entered
  int64_t endNs;     // finished or failed; 0 while in flight
  uint32_t state;    // State
  uint32_t failure;  // Failure
  int32_t rank;      // this process's rank in the group
  int32_t size;      // the group's size
  char op[16];       // "allReduce", "broadcast", ...
  char group[48];    // the group's name, truncated
  char label[64];    // the collective's debug name (options.debugName), truncated; may be empty
};
static_assert(sizeof(Slot) == 192);

inline constexpr size_t kFileSize = sizeof(Header) + kSlots * sizeof(Slot);

inline Slot* slotsOf(void* base) {
  return reinterpret_cast<Slot*>(static_cast<char*>(base) + sizeof(Header));
}
inline const Slot* slotsOf(const void* base) {
  return reinterpret_cast<const Slot*>(static_cast<const char*>(base) + sizeof(Header));
}

// Copies a slot that another process may be writing. False when it was being written (or changed
// during the copy): the caller may retry.
inline bool readSlot(const Slot& shared, Slot& out) {
  const uint64_t before = __atomic_load_n(&shared.version, __ATOMIC_ACQUIRE);
  if (before & 1) return false;
  std::memcpy(&out, &shared, sizeof out);
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t after = __atomic_load_n(&shared.version, __ATOMIC_RELAXED);
  return before == after && out.version == before;
}

// Begins and ends a change of a slot by its one writer.
inline void beginWrite(Slot& s) {
  const uint64_t v = __atomic_load_n(&s.version, __ATOMIC_RELAXED);
  __atomic_store_n(&s.version, v | 1, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
}
inline void endWrite(Slot& s) {
  const uint64_t v = __atomic_load_n(&s.version, __ATOMIC_RELAXED);
  __atomic_store_n(&s.version, (v | 1) + 1, __ATOMIC_RELEASE);
}

inline std::string fileName(int instance) {
  return kFilePrefix + std::to_string(instance);
}

}  // namespace xtrain::comm::trace

#pragma GCC visibility pop
