// The data phase of the gloo backend's collectives: gloo's own algorithms where they fit (ring
// all-reduce, ring all-gather, binomial-tree broadcast) and two rings of our own over gloo's
// unbound buffers (reduce-scatter, and all-gather with padded shards), plus the element conversions
// that let every operator and data type run on a few pairwise reductions.
//
// These functions throw gloo's exceptions (gloo::Exception, gloo::EnforceNotMet) unchanged; the
// communicator classifies and wraps them.
#pragma once

#include <gloo/context.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "xtrain/collectives.hpp"
#include "xtrain/datatype.hpp"

namespace xtrain::comm::gloo {

using Deadline = std::chrono::steady_clock::time_point;

// Temporary buffers reused by the collectives of one communicator (grow-only, uninitialised), so
// that large collectives do not pay for fresh pages on every call.
class Scratch {
 public:
  enum Use { kWork = 0, kRing = 1, kShard = 2 };
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
  std::array<Block, 3> blocks_;
};

// What a collective's data phase needs besides its buffers.
struct Exchange {
  std::shared_ptr<::gloo::Context> context;  // null for a group of one rank
  uint64_t seq = 0;   // the collective's sequence number: tags and slots are derived from it
  Deadline deadline;  // the collective's end: every wait is bounded by it
  Scratch* scratch = nullptr;
};

// Whole-buffer all-reduce: output = reduction over ranks of input (input == output: in place).
// Any operator but Local and any reducible type; k >= 1; count may be 0.
void allReduce(const Exchange& x, DataType type, CollectiveOperator op, const void* input,
               void* output, size_t count);

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
