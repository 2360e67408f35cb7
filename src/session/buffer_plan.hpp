// BufferPlan: where each activation's buffer lives in a replica's buffer table. Activations that
// only the Forward and Backward programs touch are placed in one block per replica, by the span of
// the schedule in which each is live (from its producer to its last reader), so that tensors never
// live at the same time share bytes; shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze) put
// their output over their input's bytes. Every other tensor (weights, optimizer state,
// accumulators, constants, streams, anything the session reads or writes by id, anything an op
// writes in place) keeps a buffer of its own.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::session {

enum class BufferReuse {
  Off,        // one buffer per tensor
  AliasOnly,  // shape-only ops share their input's bytes; nothing else is shared
  Full,       // aliases, and activations placed by lifetime
};

// XTRAIN_BUFFER_REUSE: "0" Off, "alias" AliasOnly, unset or "1" Full; anything else is an error.
BufferReuse bufferReuseFromEnvironment();

struct BufferPlan {
  // Per buffer (in the order of `tensors` given to planBuffers): its byte offset in the shared
  // block, or -1 for a buffer of its own.
  std::vector<int64_t> offsets;
  uint64_t blockBytes = 0;    // the shared block's size
  uint64_t plannedBytes = 0;  // the planned tensors' bytes, one buffer each
  int64_t plannedTensors = 0;
  int64_t aliases = 0;  // shape-only op outputs placed over their input

  bool shared(size_t buffer) const { return offsets[buffer] >= 0; }
};

// Plans the buffers of `tensors` (every tensor of `graph`, in buffer order; or the tensors of one
// IPU of a replica, for the memory model, which plans each IPU apart). `keep` names the
// tensors the session reads or writes by id outside the programs (anchors): they keep their own.
// `channelsLast` (session/layout_plan.hpp): a shape-only op never shares bytes with such a tensor,
// since its bytes are not in the order of its shape (the layout plan keeps shape-only ops out of
// channels-last regions already; this holds the plan to it should that change).
BufferPlan planBuffers(const ir::Graph& graph, const std::vector<TensorId>& tensors,
                       const std::set<TensorId>& keep, BufferReuse mode,
                       const std::set<TensorId>& channelsLast = {});

}  // namespace xtrain::session

#pragma GCC visibility pop
