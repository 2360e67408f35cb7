// SessionOptions::dotChecks: the session's IR graph written as Graphviz .dot files into logDir at
// PopART's check points ("Fwd0" after import, "Fwd1" after fusion, "Bwd0" after the backward
// pass and optimizer are added, "PreAlias" and "Final" when the session is built; "All": every
// one), one file <logDir>/<check>.dot each. Ops are boxes (their type, and their name with
// dotOpNames), tensors ellipses (id and type); only ops [firstDotOp, finalDotOp) of the schedule.
#pragma once
#pragma GCC visibility push(default)

#include <set>
#include <string>

#include "ir/graph.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

// The check names, in the order the session reaches them.
inline constexpr const char* kDotChecks[] = {"Fwd0", "Fwd1", "Bwd0", "PreAlias", "Final"};

// Throws xtrain::error when dotChecks names an unknown check or logDir is empty while dotChecks
// is not.
void checkDotOptions(const SessionOptions& options);

// Writes <logDir>/<check>.dot when options.dotChecks holds `check` or "All"; throws xtrain::error
// naming the file when it cannot be written.
void writeDotCheck(const ir::Graph& graph, const SessionOptions& options, const std::string& check);

}  // namespace xtrain::session

#pragma GCC visibility pop
