// What xtrain says when a step's loss is not finite: a value in the data so large that float
// arithmetic overflows on it (3e38 is finite, and passes the data's NaN/Inf check) is named with
// its dataset, sample and value; only when the data trained on is ordinary is the learning rate
// suspected. Nothing here runs unless the loss has already gone bad.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data_source.hpp"

namespace xtrain::tools {

// A value of the data whose magnitude overflows arithmetic in its type.
struct OverflowingValue {
  TensorId dataset;
  int64_t sample = 0;
  int64_t element = 0;  // within the sample
  double value = 0;
  DataType type = DataType::FLOAT;  // the input's
};

// Magnitudes above this overflow when squared (as in a matmul with a like weight, a norm or a
// squared error): sqrt of the type's largest value, for FLOAT and DOUBLE inputs; none otherwise.
std::optional<double> overflowingMagnitude(DataType type);

// The first value (by sample index, then element) of the given samples of the floating-point
// inputs that is not finite or above overflowingMagnitude; reads them through `source`, a bounded
// number of bytes at a time.
std::optional<OverflowingValue> findOverflowingValue(DataSource& source,
                                                     const std::map<TensorId, TensorInfo>& inputs,
                                                     const std::vector<int64_t>& samples);

// The error for a loss that is not finite at `step` (1-based): xtrain::error (bad input, exit 2)
// naming the value, the dataset in `file` and whether this step or an earlier one trained on it
// when `culprit` is given; else xtrain::runtime_error suggesting a smaller --lr.
[[noreturn]] void throwNonFiniteLoss(double loss, int64_t step,
                                     const std::optional<OverflowingValue>& culprit,
                                     bool inThisStep, const std::string& file);

}  // namespace xtrain::tools
