// The start-up lines of a model-parallel job (docs/model-parallelism.md): how the replicas are laid
// out over IPUs, the pipeline stages, and what each IPU of a replica holds, so that a user sees
// before the first step whether the split is balanced and how close each IPU is to its capacity.
#pragma once

#include <cstdint>
#include <string>

#include "options.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

// Whether the options ask for anything beyond one IPU per replica with every tensor on chip (the
// lines are printed only then: a plain job's start-up stays as it was).
bool usesModelParallelism(const TrainOptions& o, int64_t ipusPerReplica);

// After prepareDevice: "xtrain: <mode> placement, K IPUs per replica, <stages>..." and one line
// per IPU of replica 0 with its bytes, capacity and streaming memory, each ending in "\n". Reads
// the session's JSON report (docs/reports.md).
std::string describePlacement(const TrainOptions& o, const TrainingSession& session,
                              int64_t ipusPerReplica);

}  // namespace xtrain::tools
