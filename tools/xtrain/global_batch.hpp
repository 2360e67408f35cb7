// A job that xrun shrank (--min-instances) keeps its global batch: xrun tells every instance the
// job's original instance count (XTRAIN_ORIGINAL_NUM_INSTANCES) and how to keep the batch
// (XTRAIN_KEEP_GLOBAL_BATCH: accumulation, micro-batch or no); xtrain raises --accumulation-factor
// or --micro-batch-size by original / current (docs/launcher-environment.md, "Restarts").
#pragma once

#include <string>

#include "options.hpp"

namespace xtrain::tools {

// Adjusts `o` for a shrunk job and returns a line saying so (empty when nothing changed: no
// variables, the full job, or `no`). Throws UsageError (exit 2) when a variable is malformed or the
// global batch cannot be kept exactly (original * factor not a multiple of the current count).
std::string keepGlobalBatch(TrainOptions& o);

}  // namespace xtrain::tools
