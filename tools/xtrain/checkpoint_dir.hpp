// What xtrain checks about its --checkpoint-dir before training.
#pragma once

#include "options.hpp"

namespace xtrain::tools {

// A fresh run (no --resume) would replace same-step checkpoints, repoint `latest` and prune with
// --keep-last: throws xtrain::error (exit 2) when --checkpoint-dir already holds checkpoints,
// naming the newest, unless --overwrite-checkpoints was given.
void refuseToOverwriteCheckpoints(const TrainOptions& options);

}  // namespace xtrain::tools
