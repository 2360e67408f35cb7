// SharedMemoryTable: the memory an shm group's ranks share for their buffers
// (Communicator::allocateShared). Each allocation is one segment holding every rank's part, rank
// p's at p * partBytes; every rank maps it whole, so an in-place all-reduce of a buffer in it can
// read and write the peers' parts directly (no copy through the group's slots). The table finds the
// allocation a buffer lies in.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/backends/shm/segment.hpp"
#include "comm/communicator.hpp"
#include "comm/store.hpp"

namespace xtrain::comm::shm {

struct SharedMapping {
  uint64_t number = 0;  // 1, 2, ... in allocation order: the same allocation on every rank
  SharedSegment segment;
  size_t partBytes = 0;  // a multiple of 4096
  char* part(int rank) const {
    return static_cast<char*>(segment.data()) + static_cast<size_t>(rank) * partBytes;
  }
};

class SharedMemoryTable {
 public:
  // Rank 0 creates a segment named `segmentName` of `size` parts of `bytes` (rounded up to pages)
  // and publishes its name under `keys` ("shared/<number>"); the others open it and say so; rank 0
  // removes the name once every rank mapped it. Throws CommTimeoutError after `timeout`, and an
  // error when the ranks asked for different sizes.
  std::shared_ptr<const SharedMemory> allocate(Store& keys, const std::string& segmentName,
                                               const std::string& group, int rank, int size,
                                               size_t bytes, Milliseconds timeout);

  struct Found {
    std::shared_ptr<SharedMapping> mapping;  // held while the collective runs
    size_t offset = 0;                       // of the buffer in this rank's part
  };
  // The allocation whose part of `rank` holds all of [data, data + bytes), if any.
  std::optional<Found> find(const void* data, size_t bytes, int rank);

 private:
  std::mutex mu_;
  uint64_t allocations_ = 0;
  std::vector<std::weak_ptr<SharedMapping>> mappings_;
};

}  // namespace xtrain::comm::shm

#pragma GCC visibility pop
