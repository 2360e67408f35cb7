// Where xtrain's samples come from: an HDF5 file (--data, --val-data) or the built-in synthetic
// set of the example.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/dataset_reader.hpp"
#include "toolkit/example_models.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

// fill() writes the given samples of one input, in order, as the input's element type.
class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual int64_t numSamples() const = 0;
  virtual void fill(const TensorId& input, const TensorInfo& sampleInfo,
                    const std::vector<int64_t>& samples, void* dst) = 0;
};

// One dataset per input, named like it, first dimension = samples. The constructor checks every
// input's dataset against its per-micro-batch info (shape after the batch dimension, floating point
// or not) and that all datasets hold the same number of samples; throws xtrain::error naming the
// dataset, the file and what was expected.
std::unique_ptr<DataSource> openHdf5Source(const std::string& path,
                                           const std::map<TensorId, TensorInfo>& inputs);
// The same over a file already open (xtrain reads its datasets' shapes first, then trains from it).
std::unique_ptr<DataSource> openHdf5Source(std::unique_ptr<checkpoint::DatasetReader> reader,
                                           const std::map<TensorId, TensorInfo>& inputs);

// The built-in example's synthetic set, feeding inputs `x` (FLOAT) and `labels` (INT32).
std::unique_ptr<DataSource> exampleSource(SyntheticClassification data, TensorId x,
                                          TensorId labels);

}  // namespace xtrain::tools
