#include "comm/backends/shm/peer_memory.hpp"

#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/env_switch.hpp"

namespace xtrain::comm::shm {

namespace {

std::mutex& policyMutex() {
  static std::mutex mu;
  return mu;
}

std::function<bool(int)>& policy() {
  static std::function<bool(int)> p;
  return p;
}

// One process_vm_readv call moves at most this much, so a huge buffer does not pin all of its
// pages at once (the kernel works through them in batches anyway).
constexpr size_t kMaxBytesPerCall = size_t{64} << 20;

std::atomic<uint64_t> successfulReads{0};

}  // namespace

bool singleCopyWanted(int rank) {
  {
    std::lock_guard lock(policyMutex());
    if (policy()) return policy()(rank);
  }
  return readBoolSwitch("XTRAIN_SHM_SINGLE_COPY", false);
}

std::function<bool(int)> setSingleCopyPolicyForTesting(std::function<bool(int)> p) {
  std::lock_guard lock(policyMutex());
  std::swap(policy(), p);
  return p;
}

bool canReadPeer(int pid, const void* remote, const void* expected, size_t bytes) {
  if (pid <= 0) return false;
  std::vector<char> got(bytes);
  bool gone = false;
  if (!readPeer(pid, remote, got.data(), bytes, gone).empty()) return false;
  return std::memcmp(got.data(), expected, bytes) == 0;
}

std::string readPeer(int pid, const void* remote, void* local, size_t bytes, bool& peerGone) {
  peerGone = false;
  auto* to = static_cast<char*>(local);
  const auto* from = static_cast<const char*>(remote);
  while (bytes > 0) {
    const size_t len = bytes < kMaxBytesPerCall ? bytes : kMaxBytesPerCall;
    iovec l{to, len};
    iovec r{const_cast<char*>(from), len};
    const ssize_t got = ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      peerGone = errno == ESRCH;
      return std::strerror(errno);
    }
    if (got == 0) return "no bytes could be read";
    to += got;
    from += got;
    bytes -= static_cast<size_t>(got);
  }
  successfulReads.fetch_add(1, std::memory_order_relaxed);
  return "";
}

uint64_t peerReadsSoFar() {
  return successfulReads.load(std::memory_order_relaxed);
}

}  // namespace xtrain::comm::shm
