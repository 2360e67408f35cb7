// PipelinePlan: how a pipelined session (SessionOptions::enablePipelining; docs/pipelining.md)
// runs its per-micro-batch programs: which pipeline *slot* each op runs in, and which tensors are
// stashed between the slot that writes them and the later slots that read them.
//
// Slots. N forward stages make 2N-1 slots in training (PopART's pipeline stages after autodiff):
// slot s is stage s's forward, slot 2N-2-s stage s's backward and gradient accumulation (the last
// stage's forward and backward share slot N-1); an inference session has the N forward slots. In
// pipeline cycle c, slot k runs micro-batch c-k; the slots of one IPU run in turn (the last
// first), the IPUs at once. Each slot runs its Forward ops, then its Backward ops, then its
// Accumulate ops, in schedule order.
//
// Stashes. A tensor written in slot j and read in a later slot k would be overwritten by the next
// micro-batches before it is read (and, with the stages on threads of their own, while it is
// read). It is *stashed*: after slot j it is pushed into a ring of depth = (last reader's slot) - j
// + 1 entries, and each reading slot restores its micro-batch's entry into a private copy of the
// tensor that only that slot reads (LoweringOptions::slotCopies), so no two slots ever touch one
// buffer in a cycle: the ring is one entry deeper than the micro-batches in flight because slot j
// pushes a new entry while the readers restore theirs. A model input is streamed to the stage that
// first reads it, as PopART streams it: the host writes it before the cycle in which its first
// reading slot f runs its micro-batch (f reads it in place); it is stashed only when later slots
// read it too. The host reads an anchor of micro-batch m after the cycle in which the slot that
// writes it ran m: anchors are never stashed. Weights, optimizer state and accumulators are never
// stashed: they are the same for every micro-batch of a step (accumulators collect the
// micro-batches in order, as without pipelining). The accumulation counter, written per
// micro-batch, has a private copy in every slot.
//
// IpuCopy ops run in the slot of what they copy, as PopART copies at the end of the producing
// stage's cycle: a stash of a copied tensor lives on the IPU that reads it.
//
// Contract: the graph is the final training or inference graph (copies inserted); every Forward op
// has a pipeline stage (ir::assignPipelineStages); gradient ops inherit theirs. Ops without a stage
// (the gradient sums, loss scaling, accumulation) run in the latest slot of their inputs' writers.
// A reader in an earlier slot than its input's writer is an internal error (a graph the plan
// cannot pipeline), naming both.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "device/ipu/memory_model.hpp"
#include "ir/graph.hpp"
#include "session/session_config.hpp"

#pragma GCC visibility push(default)

namespace xtrain::session {

struct PipelineStash {
  TensorId tensor;
  int64_t writer = 0;  // the slot that writes it (a model input: its first reader's)
  bool input = false;  // a model input: pushed as the host writes it, before the cycle
  int64_t depth = 0;   // ring entries: micro-batches in flight between the push and the last read
  int64_t virtualGraph = 0;
  int64_t bytes = 0;  // of one entry
};

struct PipelinePlan {
  int64_t stages = 0;              // forward stages N; 0: not pipelined
  int64_t slots = 0;               // 2N-1 in training, N in inference
  std::map<OpId, int64_t> slotOf;  // every Forward, Backward and Accumulate op
  std::vector<PipelineStash> stashes;
  std::vector<std::vector<size_t>> pushAfter;      // per slot: stashes pushed after it runs
  std::vector<std::vector<size_t>> restoreBefore;  // per slot: stashes restored before it runs
  std::vector<size_t> pushInputs;                  // stashes of model inputs (pushed as written)
  std::map<TensorId, int64_t> inputSlot;           // each model input's first reading slot
  std::map<TensorId, int64_t> anchorSlot;          // the slot after which the host reads each
  // The private copies: (tensor, slot) for each restore, and the accumulation counter's per slot.
  std::vector<std::pair<TensorId, int64_t>> slotCopies;
  TensorId accumulationIndex;             // "" when there is none
  std::vector<int64_t> slotVirtualGraph;  // the IPU (stage's virtual graph) of each slot
  // The Update ops by the IPU that updates its own weights with them, on its stage thread (as each
  // IPU does in PopART). Empty when the update runs on one thread: an Update op that writes what
  // an Update op of another IPU reads or writes, a replicated collective among them, or one IPU.
  std::map<OpId, int64_t> updateGroups;
  // With updateGroups: no slot of one IPU reads or writes what another IPU's Update ops read or
  // write, so each IPU may update its weights as soon as its own slots are done (the last stage's
  // update then overlaps the first stage's flush), when nothing else comes between the pipeline
  // and the update (the session's part: SessionImpl::updatesInPipeline).
  bool updateAfterOwnSlots = false;

  bool enabled() const { return stages > 0; }
  // The slot that reads input `id` in place (0 for an input no slot reads).
  int64_t inputSlotOf(const TensorId& id) const {
    auto it = inputSlot.find(id);
    return it == inputSlot.end() ? 0 : it->second;
  }
  // The slot after which the host reads anchor `id` (the last for one no slot writes).
  int64_t anchorSlotOf(const TensorId& id) const {
    auto it = anchorSlot.find(id);
    return it == anchorSlot.end() ? slots - 1 : it->second;
  }
  // The micro-batch whose input `id` the host writes before cycle `cycle` (may be out of range).
  int64_t inputMicroBatch(const TensorId& id, int64_t cycle) const {
    return cycle - inputSlotOf(id);
  }
  // The micro-batch whose anchor `id` the host reads after cycle `cycle` (may be out of range).
  int64_t anchorMicroBatch(const TensorId& id, int64_t cycle) const {
    return cycle - anchorSlotOf(id);
  }
  // Pipeline cycles for `microBatches` micro-batches: fill, steady state and flush.
  int64_t cycles(int64_t microBatches) const { return microBatches + slots - 1; }
  // Bytes of every ring of the stashes on virtual graph `vg`, per replica.
  int64_t stashBytes(int64_t vg) const;
  // The virtual graphs the pipeline uses (1 + the highest of a slot's or a stash's).
  int64_t virtualGraphs() const;
};

// The session's checks of its options against the stages (each an xtrain::error naming the option
// and what would work): virtualGraphMode Manual or Auto, more than one virtual graph, gradient
// accumulation in training, an accumulation factor (training) or batches per step (inference) of
// at least the pipeline's slots (PopART's "depth"), no automatic loss scaling's histograms.
void checkPipelineOptions(const SessionConfig& config, int64_t stages, int64_t virtualGraphs);

// The plan for `graph` with `stages` forward stages; `inputs` are the tensors the host writes each
// micro-batch, `anchors` those it reads after each micro-batch; `accumulationIndex` the counter the
// session writes before each micro-batch's accumulation ("" for none).
PipelinePlan planPipeline(const ir::Graph& graph, int64_t stages, bool training,
                          const std::vector<TensorId>& inputs, const std::vector<TensorId>& anchors,
                          const TensorId& accumulationIndex);

// Charges each IPU of each local replica its stash rings (depth x bytes, as activations): the
// memory pipelining adds to an IPU's one micro-batch of activations.
void chargePipelineStashes(device::MemoryModel& model, const PipelinePlan& plan,
                           int64_t localReplicas);

}  // namespace xtrain::session

#pragma GCC visibility pop
