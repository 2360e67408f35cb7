// Pipeline stages of a forward graph (SessionOptions::enablePipelining; docs/pipelining.md).
//
// Contract:
//  - Runs on the placed forward graph (every op has a virtual graph: Manual checked, Auto split),
//    before autodiff, so that gradient ops inherit their forward op's stage.
//  - An op's stage is its __pipeline_stage; when no op has one, its virtual graph (PopART's rule).
//    After assignPipelineStages every forward op has a stage, the stages are 0..N-1 with none
//    missing, each stage is on one virtual graph, and no op reads a tensor made in a later stage.
//  - Consecutive stages on one virtual graph are merged into one (PopART's rule), after the checks.
//  - Every rule broken is an error (xtrain::error) naming the op(s) and what would work, thrown
//    before anything runs. The texts begin as PopART's where PopART has one.
#pragma once

#include <cstdint>

#include "ir/graph.hpp"

#pragma GCC visibility push(default)

namespace xtrain::ir {

// Gives every op its pipeline stage (see the contract); returns the number of stages N.
int64_t assignPipelineStages(Graph& graph);

}  // namespace xtrain::ir

#pragma GCC visibility pop
