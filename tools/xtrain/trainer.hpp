// The training loop of `xtrain`: builds the session, feeds samples in a seeded order, prints
// progress.
#pragma once

#include <ostream>

#include "options.hpp"

namespace xtrain::tools {

// Returns the process exit code. Bad input throws xtrain::error; runtime faults
// xtrain::runtime_error.
int train(const TrainOptions& options, std::ostream& out);

}  // namespace xtrain::tools
