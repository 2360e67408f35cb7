// DatasetReader: reads training data from an HDF5 file, one dataset per graph input, the first
// dimension indexing samples. Reads whole samples by index (a hyperslab per contiguous run), so
// data sets larger than memory work. Not thread-safe.
#pragma once
#pragma GCC visibility push(default)

#include <memory>
#include <string>
#include <vector>

#include "xtrain/tensorinfo.hpp"

namespace xtrain::checkpoint {

class DatasetReader {
 public:
  // Throws xtrain::error naming the path when it is missing, not a file or not an HDF5 file.
  explicit DatasetReader(const std::string& path);
  ~DatasetReader();
  DatasetReader(const DatasetReader&) = delete;
  DatasetReader& operator=(const DatasetReader&) = delete;

  const std::string& path() const { return path_; }
  // Names of the datasets at the file's root.
  std::vector<std::string> datasetNames() const;
  bool has(const std::string& name) const;
  // Element type and full shape ([samples] + sample shape). Throws naming the dataset when missing
  // or of a type xtrain cannot read.
  TensorInfo info(const std::string& name) const;
  // Copies the given samples (in this order) of dataset `name` into dst, converted to `type`
  // (FLOAT, INT32 or INT64 ...): dst holds samples.size() * sampleElements elements of `type`.
  void readSamples(const std::string& name, const std::vector<int64_t>& samples, DataType type,
                   void* dst) const;

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// Writes datasets to a new HDF5 file (used by tests and examples to make data files).
class DatasetWriter {
 public:
  explicit DatasetWriter(const std::string& path);
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;
  void write(const std::string& name, const TensorInfo& info, const void* data);
  // A soft link `name` to the path `target` in this file, and an external link `name` to `object`
  // in `file`: data sets may be assembled from links, which need not resolve.
  void softLink(const std::string& name, const std::string& target);
  void externalLink(const std::string& name, const std::string& file, const std::string& object);

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
