// Manual placement against --ipus-per-replica: a model annotated for more IPUs than each replica
// has would be refused at prepareDevice in SessionOptions' terms (acquire a device of N IPUs); the
// trainer acquires the device itself, so it names its own flag and the value that would work.
#pragma once

#include <cstdint>

#include "options.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

// With --virtual-graph-mode manual, after the session is created: every op's __ipu_number (from
// serializeIr, PopART's IR JSON) must be below ipusPerReplica. Throws xtrain::error (bad input)
// naming the first op past it and --ipus-per-replica's power of two that would hold the model.
void checkManualPlacementFits(const TrainOptions& o, const TrainingSession& session,
                              int64_t ipusPerReplica);

}  // namespace xtrain::tools
