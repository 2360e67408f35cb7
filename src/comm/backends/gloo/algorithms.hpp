// The data phase of the gloo backend's collectives: rings and a tree of our own over gloo's unbound
// buffers (all-reduce = reduce-scatter + all-gather rings, all-gather ring, pipelined binomial-tree
// broadcast), plus the element conversions that let every operator and data type run on a few
// pairwise reductions.
//
// Every buffer a collective waits on is registered with the communicator's Interrupt, so that the
// waits end at once when the group fails elsewhere: gloo's own collectives (gloo::allreduce, ...)
// wait on buffers nobody else can reach, and gloo does not wake a wait whose message was being
// written or read when its connection broke (it would last until the collective's timeout).
//
// These functions throw gloo's exceptions (gloo::Exception, gloo::EnforceNotMet) unchanged, and
// gloo::IoException("... interrupted ...") when interrupted; the communicator classifies and wraps
// them.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "xtrain/collectives.hpp"
#include "xtrain/datatype.hpp"

#pragma GCC visibility push(default)

namespace xtrain::comm::gloo {

using Deadline = std::chrono::steady_clock::time_point;

// Temporary buffers reused by the collectives of one communicator (grow-only, uninitialised), so
// that large collectives do not pay for fresh pages on every call.
class Scratch {
 public:
  enum Use { kWork = 0, kRing = 1, kShard = 2, kInbox = 3 };
  char* get(Use use, size_t bytes) {
    auto& b = blocks_[use];
    if (b.size < bytes) {
      b.data.reset();
      b.data.reset(new char[bytes]);
      b.size = bytes;
    }
    return b.data.get();
  }

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  std::array<Block, 4> blocks_;
};

// Ends the waits of a communicator's collectives from another thread (the communicator's watchdog,
// when a connection of the group broke). Sticky: once triggered, every wait of a registered buffer,
// pending or future, returns at once.
class Interrupt {
 public:
  using UnboundBuffer = ::gloo::transport::UnboundBuffer;
  void trigger() {
    std::lock_guard lock(mu_);
    triggered_ = true;
    for (UnboundBuffer* b : buffers_) abort(b);
  }
  bool triggered() const {
    std::lock_guard lock(mu_);
    return triggered_;
  }
  void add(UnboundBuffer* b) {
    std::lock_guard lock(mu_);
    buffers_.push_back(b);
    if (triggered_) abort(b);
  }
  void remove(UnboundBuffer* b) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i] == b) {
        buffers_[i] = buffers_.back();
        buffers_.pop_back();
        return;
      }
    }
  }

 private:
  // gloo keeps the abort flags until a wait consumes them, so an abort before the wait counts too.
  static void abort(UnboundBuffer* b) {
    b->abortWaitRecv();
    b->abortWaitSend();
  }
  mutable std::mutex mu_;
  bool triggered_ = false;
  std::vector<UnboundBuffer*> buffers_;
};

// What a collective's data phase needs besides its buffers.
struct Exchange {
  std::shared_ptr<::gloo::Context> context;  // null for a group of one rank
  uint64_t seq = 0;   // the collective's sequence number: tags and slots are derived from it
  Deadline deadline;  // the collective's end: every wait is bounded by it
  Scratch* scratch = nullptr;
  Interrupt* interrupt = nullptr;  // the communicator's; never null when context is set
};

// An unbound buffer of the exchange's context, registered with its Interrupt while it exists. The
// waits are bounded by the deadline (gloo then closes every connection of the context and throws a
// timeout) and throw gloo::IoException when interrupted.
class TrackedBuffer {
 public:
  TrackedBuffer(const Exchange& x, const void* ptr, size_t bytes);
  ~TrackedBuffer();
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  ::gloo::transport::UnboundBuffer* operator->() const { return ub_.get(); }
  void waitRecv();
  void waitSend();
  // Waits for `pending` sends (counting them down).
  void waitSends(size_t& pending);

 private:
  Deadline deadline_;
  Interrupt* interrupt_;
  std::unique_ptr<::gloo::transport::UnboundBuffer> ub_;
};

// Whole-buffer all-reduce: output = reduction over ranks of input (input == output: in place).
// Any operator but Local and any reducible type; k >= 1; count may be 0.
void allReduce(const Exchange& x, DataType type, CollectiveOperator op, const void* input,
               void* output, size_t count);

// The bytes of input a small all-reduce may carry inside its fingerprint message in a group of k
// ranks (the same on every rank: it sizes the receives of every fingerprint exchange), 0 for none.
// Up to this size an all-reduce is one all-to-all round (every rank sends its whole input to every
// peer with its fingerprint and reduces the k inputs itself) instead of the 2(k-1) steps of the
// rings: on small buffers the rings' cost is their steps' latency, not their bytes.
size_t inlineCapacity(int k);

// The all-reduce of the k inputs of a small all-reduce, all here (`inputs` in rank order; `output`
// may be this rank's input): reduced in rank order, so every rank computes the same bits. Every
// operator but Local and any reducible type, as allReduce.
void reduceInputs(Scratch& scratch, DataType type, CollectiveOperator op, const void* const* inputs,
                  int k, void* output, size_t count);

// Rank r gets shard r (s = ceil(count / k) elements, zero-padded past count) of the reduction of
// every rank's `input` in `output`. `output` may be the start of `input` (in place).
void reduceScatter(const Exchange& x, DataType type, CollectiveOperator op, const void* input,
                   void* output, size_t count);

// output[j*s + i] = input_j[i] for the indices below count, s = ceil(count / k). `input` ==
// `output` means in place (this rank's shard is in the first s elements of `output`).
void allGather(const Exchange& x, size_t elementSize, const void* input, void* output,
               size_t count);

// The root's `input` (output == input: in place) to every rank's `output`.
void broadcast(const Exchange& x, size_t elementSize, int root, const void* input, void* output,
               size_t count);

}  // namespace xtrain::comm::gloo

#pragma GCC visibility pop
