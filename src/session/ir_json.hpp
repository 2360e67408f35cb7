// The IR as JSON, in the shape of PopART's Session::serializeIr (docs/model-parallelism.md): an
// object with one member, "maingraph", an array of the ops in schedule order, each
//   {"type", "name", "domain", "version", "inputs": [{"name", "shape", "type", "index"}],
//    "outputs": [...], "attributes": {name: value, ...}}
// where every attribute value is a string, as PopART writes them, and the placement appears as
// PopART's attributes __ipu_number and __pipeline_stage (when the op has them). A pipelined
// session's stashes follow as PopART's Stash and RestoreInplace ops (docs/pipelining.md): one Stash
// per tensor kept over more than one slot (a ring of depth > 2; the depth-2 rings of a handoff to
// the next slot are PopART's double-buffered copies, not stashes), after its writing slot, and a
// RestoreInplace per reading slot; their __pipeline_stage is the slot.
#pragma once
#pragma GCC visibility push(default)

#include <string>

#include "ir/graph.hpp"
#include "session/pipeline_plan.hpp"

namespace xtrain::session {

std::string serializeIrJson(const ir::Graph& graph, const PipelinePlan* pipeline = nullptr);

}  // namespace xtrain::session

#pragma GCC visibility pop
