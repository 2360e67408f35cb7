// Batch serialization (SessionOptions::batchSerializationSettings, docs/batch-serialization.md):
// the ops that carry the batch run `factor` times, each time on 1/factor of the micro-batch, so
// that the activations between them live one slice at a time. It changes where and when the
// device holds what, not the mathematics, and xtrain models it where it models the device:
//
//  - the host computes every op on the whole micro-batch, as without serialization, so the
//    numbers are those of an unserialized run by construction (a slice-by-slice host run would
//    only reorder the float sums of the ops that reduce over the batch);
//  - the memory model charges each activation that lives one slice at a time as one slice
//    (memory_plan.hpp), so the activations' peak goes down with the factor;
//  - the cycle model charges each serialized op as `factor` launches on one slice each.
//
// The plan comes from shape inference run again with every streamed input cut to one slice
// along its batch axis (0; 1 for the inputs of LSTM, GRU and RNN, whose layout is [seq, batch,
// ...]; an Init op's batch_axis): a tensor whose size shrinks is sliced. An op in the transform
// context (Fwd: the forward pass; Bwd: the forward and backward passes) with a sliced input is
// serialized, unless its shape inference refuses the slice (a Reshape to a fixed batch size):
// then its inputs are concatenated first, as PopART does. A sliced tensor lives one slice at a
// time when its producer and every reader are serialized, run in the same serialized stretch
// (no reader waits for a value that all the slices make, like a weight gradient or a loss), on
// the same virtual graph and pipeline stage (concatOnVirtualGraphChange,
// concatOnPipelineStageChange), and the host does not read it (an anchor); else it is
// concatenated and charged whole.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "ir/graph.hpp"
#include "session/cycle_model.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

struct BatchSerialPlan {
  int64_t factor = 1;
  // The serialized ops: the cycles of their `factor` launches, each on one slice.
  std::map<OpId, uint64_t> serializedCycles;
  // The tensors that live one slice at a time, with the shape of one slice.
  std::map<TensorId, TensorInfo> sliceResident;
  bool enabled() const { return factor > 1; }
};

// Session creation: refuses what PopART refuses (Loop in the Fwd context of a training session)
// and what xtrain does not model (with pipelining or execution phases), and a streamed input
// whose batch axis the factor does not divide. Nothing to check with factor 0 or 1.
void checkBatchSerialization(const ir::Graph& graph, const SessionOptions& options, bool training);

// The plan of `graph` (its tensors' shapes are changed while planning and restored). `anchors`
// are read by the host: they are concatenated.
BatchSerialPlan planBatchSerialization(ir::Graph& graph, const BatchSerializationSettings& s,
                                       const std::vector<TensorId>& anchors,
                                       const CycleModel& cycles);

// While it lives, the tensors of plan.sliceResident have the shape of one slice in `graph` (for
// the memory model, which charges what their shapes say); the destructor restores them.
class SliceShapes {
 public:
  SliceShapes(ir::Graph& graph, const BatchSerialPlan& plan);
  ~SliceShapes();
  SliceShapes(const SliceShapes&) = delete;
  SliceShapes& operator=(const SliceShapes&) = delete;

 private:
  ir::Graph& graph_;
  std::map<TensorId, TensorInfo> saved_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
