// Plain types of the comm layer: buffers, per-operation options, timeouts and the comm errors.
// No backend header is included here or in any other file directly under src/comm/.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "xtrain/collectives.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/error.hpp"

namespace xtrain::comm {

using Milliseconds = std::chrono::milliseconds;

// A type-erased view of `count` elements of `type` at `data`. The view does not own the memory: the
// caller keeps it alive (and leaves it alone) until the collective using it has completed.
struct BufferView {
  void* data = nullptr;
  size_t count = 0;
  DataType type = DataType::FLOAT;

  // count * dataTypeSize(type); throws xtrain::error when that overflows.
  size_t bytes() const;
};

template <typename T>
BufferView viewOf(T* data, size_t count, DataType type) {
  return BufferView{static_cast<void*>(data), count, type};
}

// Options, one struct per operation. An unset timeout means the communicator's timeout (from
// CommConfig, else XTRAIN_COMM_TIMEOUT, else 300 s). debugName appears in logs and error messages.
struct AllReduceOptions {
  CollectiveOperator op = CollectiveOperator::Add;
  std::optional<Milliseconds> timeout;
  std::string debugName;
};

struct ReduceScatterOptions {
  CollectiveOperator op = CollectiveOperator::Add;
  std::optional<Milliseconds> timeout;
  std::string debugName;
};

struct AllGatherOptions {
  std::optional<Milliseconds> timeout;
  std::string debugName;
};

struct BroadcastOptions {
  int root = 0;
  std::optional<Milliseconds> timeout;
  std::string debugName;
};

struct BarrierOptions {
  std::optional<Milliseconds> timeout;
  std::string debugName;
};

// The default collective timeout: XTRAIN_COMM_TIMEOUT (seconds, e.g. "300" or "0.5", or with a
// unit: "200ms", "30s", "5m"; at most 30 days, common/env_value.hpp), else 300 s. Read at each
// call. Throws xtrain::error on a malformed, non-positive or too long value.
Milliseconds defaultTimeout();
// Parses a duration as XTRAIN_COMM_TIMEOUT does; `what` names the source in error messages.
Milliseconds parseDuration(std::string_view text, std::string_view what);

// Size of each shard when `count` elements are split over `groupSize` ranks: ceil(count /
// groupSize) (docs/replication-semantics.md section 5; the last shards are zero-padded).
inline size_t shardCount(size_t count, size_t groupSize) {
  return groupSize == 0 ? 0 : (count + groupSize - 1) / groupSize;
}

// The failures of a collective, each in the class of xtrain's runtime errors that PopART's
// documentation gives such a fault (docs/errors.md, "Which fault is which class").

// A collective did not complete in time. The message names the group, the operation, its sequence
// number and the ranks that did not arrive where the backend can tell. An unknown_runtime_error: a
// slow peer, a hung one and a dead host look alike from here.
class CommTimeoutError : public unknown_runtime_error {
 public:
  using unknown_runtime_error::unknown_runtime_error;
};

// Ranks of one group issued different collectives (operation, count, data type, operator, root or
// sequence number). Raised on every rank; the message shows both sides. A plain runtime_error
// (PopART's application error): the program is wrong, and a retry fails the same way.
class CommMismatchError : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

// A communicator failed earlier (timeout, mismatch) and cannot be used any more; the message
// carries the first failure. Create a new communicator (or restart the job) to continue. An
// unrecoverable_runtime_error: nothing done to this communicator makes it usable again.
class CommAbortedError : public unrecoverable_runtime_error {
 public:
  using unrecoverable_runtime_error::unrecoverable_runtime_error;
};

// A peer rank's process died (or its connection broke) during a collective. Raised on the surviving
// ranks within seconds, naming the peer; the communicator is aborted. A recoverable_runtime_error
// whose action is PARTITION_RESET: restarting every instance of the job (xrun --max-restarts,
// resuming from the last checkpoint) recovers. The message ends with "(recovery action:
// PARTITION_RESET)".
class CommPeerLostError : public recoverable_runtime_error {
 public:
  explicit CommPeerLostError(const std::string& what)
      : recoverable_runtime_error(RecoveryAction::PARTITION_RESET, what) {}
  template <typename... Args>
  explicit CommPeerLostError(std::string_view f, const Args&... args)
      : recoverable_runtime_error(RecoveryAction::PARTITION_RESET, f, args...) {}
};

// "backend X does not support Y".
class UnsupportedError : public error {
 public:
  UnsupportedError(std::string_view backend, std::string_view feature)
      : error("comm backend {} does not support {}", backend, feature) {}
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
