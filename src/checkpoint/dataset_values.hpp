// How a training dataset's values reach the type the caller asks for: every value arrives exactly
// as stored or is refused with its sample and its stored value; HDF5 on its own clamps what does
// not fit (a uint64 label of 2^63 + 5 read as INT64 became 2^63 - 1, which the loss then reported
// as out of range). Internal to src/checkpoint (DatasetReader).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>

#include "checkpoint/hdf5_handle.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::checkpoint {

// The native HDF5 type values of `type` are read into (BOOL as bytes). Throws xtrain::error for
// types the data reader does not convert to.
hid_t memoryTypeOf(DataType type);

// Reads runs of whole samples of one dataset, converted to one type. Not thread-safe; lives no
// longer than the dataset id.
class SampleRunReader {
 public:
  // `full`: the dataset's type as DatasetReader::info gives it (BOOL only for h5py's bool enum),
  // shape [samples, ...]; `where` names the dataset and its file in messages.
  SampleRunReader(hid_t ds, const TensorInfo& full, DataType type, std::string where);
  SampleRunReader(const SampleRunReader&) = delete;
  SampleRunReader& operator=(const SampleRunReader&) = delete;

  // Reads samples [first, first + count) (selected in `fileSpace`; `memSpace` is their shape) into
  // dst as the reader's type. Throws xtrain::error naming the sample, the element and the stored
  // value when a value does not fit that type (or, in a bool dataset, is not 0 or 1), or when HDF5
  // cannot read them (with HDF5's reason).
  void read(hid_t memSpace, hid_t fileSpace, int64_t first, int64_t count, void* dst);

 private:
  void readBool(hid_t memSpace, hid_t fileSpace, int64_t first, int64_t count, void* dst);
  // After HDF5 reported a value out of the target's range: reads the run as stored and throws
  // naming the first value the target cannot hold (none: HDF5's result stands, e.g. inf as FLOAT).
  void refuseValuesThatDoNotFit(hid_t memSpace, hid_t fileSpace, int64_t first, int64_t count);
  [[noreturn]] void readFailed(int64_t first, int64_t count) const;

  hid_t ds_;
  TensorInfo full_;
  DataType type_;
  std::string where_;
  int64_t sampleElements_ = 0;
  H5Handle transfer_;        // a transfer property list whose conversion callback watches ranges
  bool outOfRange_ = false;  // set by that callback
};

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
