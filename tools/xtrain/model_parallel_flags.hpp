// xtrain's model-parallel flags (docs/model-parallelism.md, docs/pipelining.md): their rows of the
// flag table, the checks that take them together with the other flags, and the session options
// they set. The IPUs of a replica may come from the launcher instead (xrun --ipus-per-replica), so
// the checks that need their number take it as an argument.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/flag_table.hpp"
#include "options.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::tools {

void addModelParallelFlags(flags::FlagTable<TrainOptions>& t);

// The checks that need no layout: pipelining without accumulation or placement, --recompute
// pipeline without pipelining, an --ipus-per-replica that is not a power of two. Throws UsageError.
void checkModelParallelOptions(const TrainOptions& o);

// The checks that need the IPUs each replica has (--ipus-per-replica, or xrun's): extra IPUs that
// nothing would use, Auto pipelining over one IPU. Throws xtrain::error (bad input).
void checkIpusPerReplica(const TrainOptions& o, int64_t ipusPerReplica);

// virtualGraphMode, enablePipelining, autoRecomputation and the off-chip tensor locations.
void applyModelParallelOptions(const TrainOptions& o, SessionOptions& options);

// --offchip's classes, in canonical order ("weights", "optimizer-state", "accumulators").
std::vector<std::string> offChipClasses(const TrainOptions& o);

}  // namespace xtrain::tools
