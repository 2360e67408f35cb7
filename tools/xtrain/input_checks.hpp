// Checks xtrain makes of what the user gave it before (outputs) and while (data) it trains, so a
// mistake is reported as bad input (exit code 2) naming the flag, dataset or sample at fault.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "options.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

// Before the first step: --save-model can be written (on instance 0, which writes it) and
// --checkpoint-dir is, or can be made, a writable directory. Throws xtrain::error naming the flag.
void checkOutputs(const TrainOptions& options, int64_t instance);

// The floating-point values of `batch` (one input's samples, in the order of `samples`) are finite;
// throws xtrain::error naming the dataset, the file, the sample's index and the value otherwise.
// NaN or Inf in the data would otherwise surface later as a non-finite loss, blamed on the rate.
void requireFiniteSamples(OwnedArray& batch, const std::string& dataset, const std::string& file,
                          const std::vector<int64_t>& samples);

}  // namespace xtrain::tools
