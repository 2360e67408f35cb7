#include "comm/backends/shm/shared_memory.hpp"

#include <algorithm>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::comm::shm {

namespace {

constexpr size_t kPageBytes = 4096;

// The key under which rank `rank` reports having mapped allocation `key` ("" or why it could not).
std::string openedKey(const std::string& key, int rank) {
  return format("{}/opened/{}", key, rank);
}

}  // namespace

std::shared_ptr<const SharedMemory> SharedMemoryTable::allocate(Store& keys,
                                                                const std::string& segmentName,
                                                                const std::string& group, int rank,
                                                                int size, size_t bytes,
                                                                Milliseconds timeout) {
  auto mapping = std::make_shared<SharedMapping>();
  mapping->partBytes = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  {
    std::lock_guard lock(mu_);
    mapping->number = ++allocations_;
  }
  const size_t total = mapping->partBytes * static_cast<size_t>(size);
  const std::string key = format("shared/{}", mapping->number);
  const auto what = [&] {
    return format("shm: rank {} allocating shared memory {} ({} bytes per rank) of group '{}'",
                  rank, mapping->number, bytes, group);
  };
  if (rank == 0) {
    mapping->segment = SharedSegment::create(segmentName, total);
    keys.set(key, segmentName);
    std::vector<std::string> opened;
    for (int p = 1; p < size; ++p) opened.push_back(openedKey(key, p));
    try {
      keys.wait(opened, timeout);
    } catch (const CommTimeoutError& e) {
      throw CommTimeoutError("{}: not every rank mapped it after {} ms: {}", what(),
                             timeout.count(), e.what());
    }
    mapping->segment.unlink();
    for (int p = 1; p < size; ++p) {
      const std::string why = keys.get(openedKey(key, p), timeout);
      if (!why.empty()) throw error("{}: rank {} could not map it: {}", what(), p, why);
    }
  } else {
    std::string name;
    try {
      name = keys.get(key, timeout);
    } catch (const CommTimeoutError& e) {
      throw CommTimeoutError("{}: rank 0 did not create it after {} ms: {}", what(),
                             timeout.count(), e.what());
    }
    std::string why;
    try {
      mapping->segment = SharedSegment::open(name);
      if (mapping->segment.size() != total) {
        why = format("rank 0 made it {} bytes, but rank {} expected {} ({} ranks of {} bytes)",
                     mapping->segment.size(), rank, total, size, mapping->partBytes);
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    keys.set(openedKey(key, rank), why);
    if (!why.empty()) throw error("{}: {}", what(), why);
  }
  {
    std::lock_guard lock(mu_);
    std::erase_if(mappings_, [](const auto& m) { return m.expired(); });
    mappings_.push_back(mapping);
  }
  auto memory = std::make_shared<SharedMemory>();
  memory->data = reinterpret_cast<std::byte*>(mapping->part(rank));
  memory->bytes = bytes;
  memory->mapping = mapping;
  return memory;
}

std::optional<SharedMemoryTable::Found> SharedMemoryTable::find(const void* data, size_t bytes,
                                                                int rank) {
  const auto* p = static_cast<const char*>(data);
  std::lock_guard lock(mu_);
  for (const auto& weak : mappings_) {
    auto m = weak.lock();
    if (!m) continue;
    const char* part = m->part(rank);
    if (p >= part && p < part + m->partBytes &&
        bytes <= m->partBytes - static_cast<size_t>(p - part))
      return Found{m, static_cast<size_t>(p - part)};
  }
  return std::nullopt;
}

}  // namespace xtrain::comm::shm
