#include "comm/communicator.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

namespace xtrain::comm {

bool isReducible(DataType type, CollectiveOperator op) {
  if (op == CollectiveOperator::Local) return dataTypeSize(type) != 0;
  switch (type) {
    case DataType::FLOAT:
    case DataType::FLOAT16:
    case DataType::INT32:
    case DataType::INT64:
    case DataType::UINT8: return true;
    default: return false;
  }
}

namespace {

// Checks one buffer before any communication: bytes() does not overflow, a buffer with elements has
// data, the type has a size.
void checkBuffer(const Communicator& c, std::string_view opName, std::string_view role,
                 const BufferView& b) {
  if (dataTypeSize(b.type) == 0) {
    throw error("{} on group '{}': {} has data type {}, which has no fixed element size", opName,
                c.name(), role, dataTypeName(b.type));
  }
  try {
    (void)b.bytes();
  } catch (const error& e) {
    throw error("{} on group '{}': {}: {}", opName, c.name(), role, e.what());
  }
  if (b.data == nullptr && b.count > 0) {
    throw error("{} on group '{}': {} is a null pointer with {} elements", opName, c.name(), role,
                b.count);
  }
}

void checkSameType(const Communicator& c, std::string_view opName, const BufferView& in,
                   const BufferView& out) {
  if (in.type != out.type) {
    throw error("{} on group '{}': input has data type {} but output has {}", opName, c.name(),
                dataTypeName(in.type), dataTypeName(out.type));
  }
}

void checkReducible(const Communicator& c, std::string_view opName, DataType type,
                    CollectiveOperator op) {
  if (!isReducible(type, op)) {
    throw error(
        "{} on group '{}': operator {} does not support data type {} (supported: FLOAT, "
        "FLOAT16, INT32, INT64, UINT8)",
        opName, c.name(), toString(op), dataTypeName(type));
  }
}

// In place means the same start address; other overlaps are rejected.
void checkOverlap(const Communicator& c, std::string_view opName, const BufferView& in,
                  const BufferView& out) {
  if (in.data == out.data || in.count == 0 || out.count == 0) return;
  const auto a = reinterpret_cast<uintptr_t>(in.data);
  const auto b = reinterpret_cast<uintptr_t>(out.data);
  if (a < b + out.bytes() && b < a + in.bytes()) {
    throw error("{} on group '{}': input and output overlap without being the same buffer", opName,
                c.name());
  }
}

thread_local bool tlsSyncCall = false;

// Marks the issue of a *Sync helper's collective on this thread.
class SyncCallScope {
 public:
  SyncCallScope() : previous_(tlsSyncCall) { tlsSyncCall = true; }
  ~SyncCallScope() { tlsSyncCall = previous_; }
  SyncCallScope(const SyncCallScope&) = delete;
  SyncCallScope& operator=(const SyncCallScope&) = delete;

 private:
  bool previous_;
};

// Issues with the sync mark, then waits outside it.
template <typename Issue>
void issueAndWait(Issue&& issue) {
  std::shared_ptr<Work> work;
  {
    SyncCallScope scope;
    work = issue();
  }
  work->wait();
}

}  // namespace

bool Communicator::issuedBySyncCall() {
  return tlsSyncCall;
}

std::shared_ptr<Work> Communicator::allReduce(BufferView input, BufferView output,
                                              const AllReduceOptions& options) {
  checkBuffer(*this, "allReduce", "input", input);
  checkBuffer(*this, "allReduce", "output", output);
  checkSameType(*this, "allReduce", input, output);
  checkReducible(*this, "allReduce", input.type, options.op);
  if (input.count != output.count) {
    throw error("allReduce on group '{}': input has {} elements but output has {}", name(),
                input.count, output.count);
  }
  checkOverlap(*this, "allReduce", input, output);
  return doAllReduce(input, output, options);
}

std::shared_ptr<Work> Communicator::allReduce(BufferView buffer, const AllReduceOptions& options) {
  return allReduce(buffer, buffer, options);
}

std::shared_ptr<Work> Communicator::reduceScatter(BufferView input, BufferView output,
                                                  const ReduceScatterOptions& options) {
  checkBuffer(*this, "reduceScatter", "input", input);
  checkBuffer(*this, "reduceScatter", "output", output);
  checkSameType(*this, "reduceScatter", input, output);
  checkReducible(*this, "reduceScatter", input.type, options.op);
  const size_t shard = shardCount(input.count, static_cast<size_t>(size()));
  if (input.data == output.data) {
    if (output.count != input.count && output.count != shard) {
      throw error(
          "reduceScatter on group '{}': in place, the buffer must be the input ({} elements)",
          name(), input.count);
    }
    output.count = shard;
  } else if (output.count != shard) {
    throw error(
        "reduceScatter on group '{}': {} input elements over {} ranks give shards of {} "
        "elements, but the output has {}",
        name(), input.count, size(), shard, output.count);
  }
  checkOverlap(*this, "reduceScatter", input, output);
  return doReduceScatter(input, output, options);
}

std::shared_ptr<Work> Communicator::reduceScatter(BufferView buffer,
                                                  const ReduceScatterOptions& options) {
  return reduceScatter(buffer, buffer, options);
}

std::shared_ptr<Work> Communicator::allGather(BufferView input, BufferView output,
                                              const AllGatherOptions& options) {
  checkBuffer(*this, "allGather", "input", input);
  checkBuffer(*this, "allGather", "output", output);
  checkSameType(*this, "allGather", input, output);
  const size_t shard = shardCount(output.count, static_cast<size_t>(size()));
  if (input.data == output.data) {
    input.count = shard;
  } else if (input.count != shard) {
    throw error(
        "allGather on group '{}': an output of {} elements over {} ranks needs input shards "
        "of {} elements, but the input has {}",
        name(), output.count, size(), shard, input.count);
  }
  checkOverlap(*this, "allGather", input, output);
  return doAllGather(input, output, options);
}

std::shared_ptr<Work> Communicator::allGather(BufferView buffer, const AllGatherOptions& options) {
  return allGather(buffer, buffer, options);
}

std::shared_ptr<Work> Communicator::broadcast(BufferView input, BufferView output,
                                              const BroadcastOptions& options) {
  if (options.root < 0 || options.root >= size()) {
    throw error("broadcast on group '{}': root {} is out of range [0, {})", name(), options.root,
                size());
  }
  checkBuffer(*this, "broadcast", "output", output);
  if (rank() == options.root) {
    checkBuffer(*this, "broadcast", "input", input);
    checkSameType(*this, "broadcast", input, output);
    if (input.count != output.count) {
      throw error("broadcast on group '{}': the root's input has {} elements but its output has {}",
                  name(), input.count, output.count);
    }
    checkOverlap(*this, "broadcast", input, output);
  }
  return doBroadcast(input, output, options);
}

std::shared_ptr<Work> Communicator::broadcast(BufferView buffer, const BroadcastOptions& options) {
  return broadcast(buffer, buffer, options);
}

std::shared_ptr<Work> Communicator::barrier(const BarrierOptions& options) {
  return doBarrier(options);
}

void Communicator::allReduceSync(BufferView input, BufferView output,
                                 const AllReduceOptions& options) {
  issueAndWait([&] { return allReduce(input, output, options); });
}
void Communicator::allReduceSync(BufferView buffer, const AllReduceOptions& options) {
  issueAndWait([&] { return allReduce(buffer, options); });
}
void Communicator::reduceScatterSync(BufferView input, BufferView output,
                                     const ReduceScatterOptions& options) {
  issueAndWait([&] { return reduceScatter(input, output, options); });
}
void Communicator::reduceScatterSync(BufferView buffer, const ReduceScatterOptions& options) {
  issueAndWait([&] { return reduceScatter(buffer, options); });
}
void Communicator::allGatherSync(BufferView input, BufferView output,
                                 const AllGatherOptions& options) {
  issueAndWait([&] { return allGather(input, output, options); });
}
void Communicator::allGatherSync(BufferView buffer, const AllGatherOptions& options) {
  issueAndWait([&] { return allGather(buffer, options); });
}
void Communicator::broadcastSync(BufferView input, BufferView output,
                                 const BroadcastOptions& options) {
  issueAndWait([&] { return broadcast(input, output, options); });
}
void Communicator::broadcastSync(BufferView buffer, const BroadcastOptions& options) {
  issueAndWait([&] { return broadcast(buffer, options); });
}
void Communicator::barrierSync(const BarrierOptions& options) {
  issueAndWait([&] { return barrier(options); });
}

std::shared_ptr<Communicator> Communicator::split(const std::vector<int>& ranks,
                                                  const std::string& splitName) {
  if (ranks.empty())
    throw error("split of group '{}' into '{}': no ranks given", name(), splitName);
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= size()) {
      throw error("split of group '{}' into '{}': rank {} is out of range [0, {})", name(),
                  splitName, r, size());
    }
    if (!seen.insert(r).second) {
      throw error("split of group '{}' into '{}': rank {} is listed twice in {}", name(), splitName,
                  r, ranks);
    }
  }
  if (!seen.count(rank())) {
    throw error("split of group '{}' into '{}': rank {} calls split but is not in {}", name(),
                splitName, rank(), ranks);
  }
  if (splitName.empty() || splitName.find('|') != std::string::npos) {
    throw error("split of group '{}': the name '{}' must be non-empty and must not contain '|'",
                name(), splitName);
  }
  return doSplit(ranks, splitName);
}

std::shared_ptr<const SharedMemory> Communicator::allocateShared(size_t bytes) {
  if (bytes == 0) throw error("allocateShared on group '{}': 0 bytes asked for", name());
  if (size() == 1) return nullptr;
  return doAllocateShared(bytes);
}

std::shared_ptr<const SharedMemory> Communicator::doAllocateShared(size_t) {
  return nullptr;
}

std::shared_ptr<Work> Communicator::doAllReduce(BufferView, BufferView, const AllReduceOptions&) {
  throw UnsupportedError(backendName(), "allReduce");
}
std::shared_ptr<Work> Communicator::doReduceScatter(BufferView, BufferView,
                                                    const ReduceScatterOptions&) {
  throw UnsupportedError(backendName(), "reduceScatter");
}
std::shared_ptr<Work> Communicator::doAllGather(BufferView, BufferView, const AllGatherOptions&) {
  throw UnsupportedError(backendName(), "allGather");
}
std::shared_ptr<Work> Communicator::doBroadcast(BufferView, BufferView, const BroadcastOptions&) {
  throw UnsupportedError(backendName(), "broadcast");
}
std::shared_ptr<Work> Communicator::doBarrier(const BarrierOptions&) {
  throw UnsupportedError(backendName(), "barrier");
}
std::shared_ptr<Communicator> Communicator::doSplit(const std::vector<int>&, const std::string&) {
  throw UnsupportedError(backendName(), "split");
}

}  // namespace xtrain::comm
