// Automatic recomputation (SessionOptions::autoRecomputation): forward activations that the
// backward pass reads are recomputed in the Backward phase instead of being kept alive from the
// forward pass to the backward pass, trading compute for activation memory.
//
// Contract:
//  - Runs on a training graph after autodiff (and the optimizer): it needs the Backward ops.
//  - Chooses forward ops by mode (PopART's RecomputationType), then clones each chosen op whose
//    outputs a Backward op reads (directly, or through another clone) into the Backward phase,
//    with Op::recomputes naming the original. Backward readers of the original's outputs read the
//    clone's; the original and every Forward, Accumulate and Update reader are untouched. A clone
//    reads the clone of an input whose producer was cloned, else the input itself (a checkpoint:
//    kept from the forward pass).
//     - Standard: PopART's choice: the forward ops on the loss's path in schedule order are cut
//       into intervals of decreasing length (about sqrt(2n) of them); in each interval the point
//       where the fewest bytes of outputs are still awaited by later forward ops is a checkpoint
//       (the ops whose outputs are live there); everything else is recomputed.
//     - NormOnly: BatchNormalization, LayerNormalization, GroupNormalization and
//       InstanceNormalization, and the elementwise non-linearity that directly follows one.
//     - RecomputeAll: every forward op on the loss's path.
//     - Pipeline (pipelining only): every forward op on the loss's path, as RecomputeAll, except
//       that a clone reads a clone only within its own pipeline stage: each stage recomputes its
//       forward pass from its inputs (which the pipeline stashes), PopART's Pipeline mode.
//     - None: nothing.
//  - Never cloned: ops with side effects or that talk to other replicas (collectives, Abort,
//    PrintTensor), ops that write inputs in place, custom ops (their kernels are the user's) and
//    ops that produce a tensor in `keep` or a graph output (those stay alive anyway). Ops with
//    randomness (Dropout) are cloned: the lowering seeds a clone as its original, so it draws the
//    same numbers.
//  - The model's marks (Op::recomputeType) refine the choice: an op marked Checkpoint is never
//    chosen; with mode None, the ops marked Recompute are the choice (manual recomputation); an
//    automatic mode with ops marked Recompute is an error (PopART: "A mixture of auto and manual
//    recomputation is not supported").
//  - The clone runs the same kernel on the same input values, so it computes the same bits: a
//    model trains to the same weights with and without recomputation.
#pragma once
#pragma GCC visibility push(default)

#include <set>

#include "ir/graph.hpp"
#include "xtrain/sessionoptions_settings.hpp"

namespace xtrain::ir {

// The ONNX node attribute PopART's Builder keeps an op's RecomputeType in.
inline constexpr const char* kRecomputeAttribute = "__recompute_output_in_backward_pass";

// Takes kRecomputeAttribute out of an imported node's attributes: Undefined when absent; an
// attribute that is not an INT of Undefined, Checkpoint or Recompute is an error naming `label`.
RecomputeType takeRecomputeType(Attributes& attrs, const std::string& label);

struct RecomputeReport {
  int candidates = 0;  // forward ops the mode chose
  int cloned = 0;      // of them, the ops cloned into the Backward phase
};

RecomputeReport recompute(Graph& graph, RecomputationType mode, const TensorId& loss,
                          const std::set<TensorId>& keep);

// Whether `op` may be recomputed at all (see the contract's "never cloned").
bool canRecompute(const Op& op);

}  // namespace xtrain::ir

#pragma GCC visibility pop
