// Subgraph ops of the Python Builder (builder_ops_subgraph.cpp): Call, If, Loop and Scan take
// subgraph Builders, which builder.cpp knows.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "xtrain/builder.hpp"

namespace xtrain::python {

// The C++ Builder of a Python Builder; a TypeError naming `what` for anything else (builder.cpp).
Builder& coreBuilderOf(pybind11::handle builder, const std::string& what);

// Adds call (AiGraphcoreOpset1) and logical_if, loop, scan (AiOnnxOpset11 and later) to the op
// builders' classes, which must be bound already.
void bindSubgraphOps(pybind11::module_& m);

}  // namespace xtrain::python
