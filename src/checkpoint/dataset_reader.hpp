// DatasetReader: reads training data from an HDF5 file, one dataset per graph input, the first
// dimension indexing samples. Reads whole samples by index (a hyperslab per contiguous run), so
// data sets larger than memory work; a dataset that fits the reader's resident budget is read
// whole at its first use and batches are then copied from memory (a small model's step is
// otherwise dominated by HDF5's per-read cost). Not thread-safe.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/tensorinfo.hpp"

namespace xtrain::checkpoint {

class DatasetReader {
 public:
  // Throws xtrain::error naming the path when it is missing, not a file or not an HDF5 file.
  // `residentBytes`: how many bytes of datasets (in the types asked for) may be kept in memory,
  // whole datasets only, first come first served; 0 reads every batch from the file.
  explicit DatasetReader(const std::string& path, size_t residentBytes = 0);
  ~DatasetReader();
  DatasetReader(const DatasetReader&) = delete;
  DatasetReader& operator=(const DatasetReader&) = delete;

  const std::string& path() const { return path_; }
  // Names of the datasets at the file's root.
  std::vector<std::string> datasetNames() const;
  bool has(const std::string& name) const;
  // Element type and full shape ([samples] + sample shape). Throws naming the dataset when missing,
  // of a type xtrain cannot read, or stored where its file cannot hold it (dataset_storage.hpp).
  // Integers, IEEE floats (2, 4, 8 bytes) and h5py's bool enum (as BOOL) are read, in any storage
  // layout h5py writes: contiguous, compact, chunked, compressed, unlimited, partly written.
  TensorInfo info(const std::string& name) const;
  // Copies the given samples (in this order) of dataset `name` into dst, converted to `type`
  // (FLOAT, INT32 or INT64 ...): dst holds samples.size() * sampleElements elements of `type`.
  // A stored value `type` cannot hold (a uint64 above INT64's maximum read as INT64, a double
  // beyond FLOAT's range read as FLOAT), or a byte other than 0 or 1 in a bool dataset, is refused
  // (xtrain::error naming the sample and the value as stored), never clamped.
  void readSamples(const std::string& name, const std::vector<int64_t>& samples, DataType type,
                   void* dst) const;
  // Bytes of datasets kept in memory so far.
  size_t residentBytes() const;

  // XTRAIN_DATA_RESIDENT_BYTES (a byte count; 0 turns keeping off), else 256 MiB: the budget the
  // xtrain CLI gives its data reader. Throws xtrain::error naming the variable when it is not a
  // byte count.
  static size_t residentBytesFromEnvironment();

 private:
  // readSamples from the file itself; `full` is info(name).
  void readFromFile(const std::string& name, const TensorInfo& full,
                    const std::vector<int64_t>& samples, DataType type, void* dst) const;

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
