// Communicator: collectives among the ranks of one group.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/types.hpp"
#include "comm/work.hpp"

namespace xtrain::comm {

// This rank's part of memory that every rank of a group maps (Communicator::allocateShared).
struct SharedMemory {
  std::byte* data = nullptr;  // `bytes` zero-filled bytes, 4096-byte aligned
  size_t bytes = 0;
  std::shared_ptr<void> mapping;  // keeps the memory mapped
};

// Contract (every backend):
//  - Ordering: every rank of the group issues the same collectives in the same order, with
//    matching arguments (operation, count, data type, operator, root). Each collective gets the
//    next per-communicator sequence number (0, 1, 2, ...) at issue time; collectives of one
//    communicator complete in issue order. A mismatch is detected on every call and raises
//    CommMismatchError on all ranks.
//  - Asynchrony: allReduce, reduceScatter, allGather, broadcast and barrier return at once with a
//    Work; the *Sync helpers issue and wait. Buffers are borrowed until the Work completes (see
//    work.hpp).
//  - Buffers: each rank's outputs are its own (ranks never share an output buffer, in place or
//    not); an input may be shared by ranks of one process out of place (it is only read).
//  - Timeouts: every collective is bounded by its options' timeout (default: the communicator's).
//    On timeout every waiting rank raises CommTimeoutError naming the group, the op, the sequence
//    number and the ranks that did not arrive.
//  - Failure: after a timeout or mismatch the communicator is aborted: later collectives fail at
//    once with CommAbortedError carrying the first failure.
//  - Bad arguments (null buffer with count > 0, size overflow, wrong output count, unsupported
//    data type, root out of range, overlapping input and output) throw xtrain::error at issue
//    time, before any communication and without taking a sequence number.
//  - Threads: methods may be called from any thread (issue is serialised), but issue order is the
//    sequence order, so a rank that issues from several threads must order those calls itself.
//  - Ownership: communicators are shared (std::shared_ptr). A sub-communicator from split() is
//    independent of its parent (it may outlive it). Destruction waits for the issued collectives
//    to finish (each bounded by its timeout).
//
// Data types: reductions support FLOAT, FLOAT16 (reduced in float), INT32, INT64 and UINT8; integer
// Add, Mul and SquareAdd wrap around; integer Mean rounds toward zero (exact for INT32 and UINT8;
// an INT64 sum that overflows wraps before the division). Broadcast, all-gather and the Local
// operator copy bytes and accept any fixed-size type.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The group's name ("world", "world/dp0", ...), used in messages.
  virtual const std::string& name() const = 0;
  virtual const std::string& backendName() const = 0;
  // The communicator's default timeout for collectives.
  virtual Milliseconds timeout() const = 0;

  // Every rank ends with the reduction of all ranks' `input` in `output` (same count and type).
  // In place: input and output are the same buffer.
  [[nodiscard]] std::shared_ptr<Work> allReduce(BufferView input, BufferView output,
                                                const AllReduceOptions& options = {});
  [[nodiscard]] std::shared_ptr<Work> allReduce(BufferView buffer,
                                                const AllReduceOptions& options = {});

  // `input` has n elements on every rank; rank r ends with elements [r*s, (r+1)*s) of the reduction
  // in `output`, s = ceil(n / size()), zero-padded past n. Out of place: output.count == s. In
  // place: the shard is written to the first s elements of `buffer` (the rest of it is left
  // unspecified).
  [[nodiscard]] std::shared_ptr<Work> reduceScatter(BufferView input, BufferView output,
                                                    const ReduceScatterOptions& options = {});
  [[nodiscard]] std::shared_ptr<Work> reduceScatter(BufferView buffer,
                                                    const ReduceScatterOptions& options = {});

  // The inverse of reduceScatter: `output` has n elements, every rank's `input` has s = ceil(n /
  // size()); output[r*s + i] = input_r[i] for the indices below n (padding is dropped). In place:
  // `buffer` has n elements and this rank's shard in its first s elements.
  [[nodiscard]] std::shared_ptr<Work> allGather(BufferView input, BufferView output,
                                                const AllGatherOptions& options = {});
  [[nodiscard]] std::shared_ptr<Work> allGather(BufferView buffer,
                                                const AllGatherOptions& options = {});

  // The root's `input` is copied to every rank's `output` (input is read only on the root and may
  // be empty elsewhere). In place: the root's buffer is copied to every other rank's buffer.
  [[nodiscard]] std::shared_ptr<Work> broadcast(BufferView input, BufferView output,
                                                const BroadcastOptions& options = {});
  [[nodiscard]] std::shared_ptr<Work> broadcast(BufferView buffer,
                                                const BroadcastOptions& options = {});

  [[nodiscard]] std::shared_ptr<Work> barrier(const BarrierOptions& options = {});

  // Blocking helpers: issue, then wait() (rethrowing any failure).
  void allReduceSync(BufferView input, BufferView output, const AllReduceOptions& options = {});
  void allReduceSync(BufferView buffer, const AllReduceOptions& options = {});
  void reduceScatterSync(BufferView input, BufferView output,
                         const ReduceScatterOptions& options = {});
  void reduceScatterSync(BufferView buffer, const ReduceScatterOptions& options = {});
  void allGatherSync(BufferView input, BufferView output, const AllGatherOptions& options = {});
  void allGatherSync(BufferView buffer, const AllGatherOptions& options = {});
  void broadcastSync(BufferView input, BufferView output, const BroadcastOptions& options = {});
  void broadcastSync(BufferView buffer, const BroadcastOptions& options = {});
  void barrierSync(const BarrierOptions& options = {});

  // A sub-communicator of the ranks `ranks` of this group (distinct, in range, this rank among
  // them); this rank's rank in it is its index in `ranks`. Called by exactly those ranks, each
  // passing the same `ranks` and `name`; waits (bounded by timeout()) until all of them arrived.
  // Different groups may split concurrently. Does not take a sequence number of this communicator.
  // The new group is named "<name()>/<name>".
  std::shared_ptr<Communicator> split(const std::vector<int>& ranks, const std::string& name);

  // `bytes` of memory for this rank in a segment every rank of the group maps, or null where the
  // backend has none (it is not shm, or the group has one rank). An in-place all-reduce of a
  // buffer in it may then read and write the peers' parts directly instead of copying through
  // the backend's own buffers (shm: no copy in or out). Called by every rank in the same order
  // with the same `bytes` (like split, it takes no sequence number); waits, bounded by
  // timeout(), until every rank mapped the segment.
  std::shared_ptr<const SharedMemory> allocateShared(size_t bytes);

 protected:
  // True while one of the *Sync helpers issues its collective on this thread: the caller will wait
  // at once, so a backend may run the collective on the calling thread (see SerialExecutor).
  static bool issuedBySyncCall();

  // Backends implement these; arguments are already validated (counts consistent, types supported
  // for the operation, root in range). The defaults throw UnsupportedError.
  virtual std::shared_ptr<Work> doAllReduce(BufferView input, BufferView output,
                                            const AllReduceOptions& options);
  virtual std::shared_ptr<Work> doReduceScatter(BufferView input, BufferView output,
                                                const ReduceScatterOptions& options);
  virtual std::shared_ptr<Work> doAllGather(BufferView input, BufferView output,
                                            const AllGatherOptions& options);
  virtual std::shared_ptr<Work> doBroadcast(BufferView input, BufferView output,
                                            const BroadcastOptions& options);
  virtual std::shared_ptr<Work> doBarrier(const BarrierOptions& options);
  virtual std::shared_ptr<Communicator> doSplit(const std::vector<int>& ranks,
                                                const std::string& name);
  // The default: null (no shared memory).
  virtual std::shared_ptr<const SharedMemory> doAllocateShared(size_t bytes);
};

// Whether `op` can reduce `type` (the types listed above; Local accepts any fixed-size type).
bool isReducible(DataType type, CollectiveOperator op);

}  // namespace xtrain::comm

#pragma GCC visibility pop
