// The IR as JSON, in the shape of PopART's Session::serializeIr (docs/model-parallelism.md): an
// object with one member, "maingraph", an array of the ops in schedule order, each
//   {"type", "name", "domain", "version", "inputs": [{"name", "shape", "type", "index"}],
//    "outputs": [...], "attributes": {name: value, ...}}
// where every attribute value is a string, as PopART writes them, and the placement appears as
// PopART's attributes __ipu_number and __pipeline_stage (when the op has them).
#pragma once
#pragma GCC visibility push(default)

#include <string>

#include "ir/graph.hpp"

namespace xtrain::session {

std::string serializeIrJson(const ir::Graph& graph);

}  // namespace xtrain::session

#pragma GCC visibility pop
