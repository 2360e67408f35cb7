#include "comm/backends/shm/group.hpp"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>

#include "comm/queued_communicator.hpp"
#include "common/usable_cpus.hpp"
#include "xtrain/format.hpp"

namespace xtrain::comm::shm {

namespace {

constexpr uint64_t kMagic = 0x7874726e73686d31ULL;  // "xtrnshm1"
constexpr uint32_t kVersion = 3;  // 2: RankState holds the single-copy fields; 3: sharedUse
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);
// How long a waiter spins before it sleeps on the futex: long enough to catch a peer that is
// running on another core, short enough not to steal a core from a peer that is not.
constexpr auto kSpinTime = std::chrono::microseconds(50);

size_t alignUp(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

size_t dataOffset(int size) {
  return alignUp(sizeof(Header) + sizeof(RankState) * static_cast<size_t>(size), 4096);
}

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  struct timespec ts {};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1000000000);
  // Shared (not FUTEX_PRIVATE) futex: the word lives in memory mapped by several processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Whether process `pid` is gone (no such process, or a zombie nobody reaped yet).
bool processIsGone(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

}  // namespace

size_t segmentBytes(int size, size_t slotBytes) {
  return dataOffset(size) + 2 * static_cast<size_t>(size + 1) * slotBytes;
}

ShmGroup::ShmGroup(SharedSegment segment, std::string groupName, int size)
    : segment_(std::move(segment)), name_(std::move(groupName)), size_(size) {
  auto* base = static_cast<char*>(segment_.data());
  header_ = reinterpret_cast<Header*>(base);
  ranks_ = reinterpret_cast<RankState*>(base + sizeof(Header));
  data_ = base + dataOffset(size);
  spin_ = size <= usableCpus();
}

ShmGroup ShmGroup::create(const std::string& segmentName, std::string groupName, int size,
                          size_t slotBytes) {
  auto segment = SharedSegment::create(segmentName, segmentBytes(size, slotBytes));
  auto* base = static_cast<char*>(segment.data());
  auto* h = new (base) Header{};
  h->magic = kMagic;
  h->version = kVersion;
  h->size = size;
  h->slotBytes = slotBytes;
  h->totalBytes = segment.size();
  for (int r = 0; r < size; ++r) new (base + sizeof(Header) + sizeof(RankState) * r) RankState{};
  ShmGroup g(std::move(segment), std::move(groupName), size);
  g.slotBytes_ = slotBytes;
  return g;
}

ShmGroup ShmGroup::open(const std::string& segmentName, std::string groupName, int rank, int size) {
  auto segment = SharedSegment::open(segmentName);
  const auto* h = static_cast<const Header*>(segment.data());
  if (segment.size() < sizeof(Header) || h->magic != kMagic || h->version != kVersion) {
    throw runtime_error("shm: segment {} of group '{}' is not an xtrain shm segment of version {}",
                        segmentName, groupName, kVersion);
  }
  if (h->size != size) {
    throw error("shm: rank {} joins group '{}' with size {}, but rank 0 created it with size {}",
                rank, groupName, size, h->size);
  }
  if (h->totalBytes != segment.size() || segmentBytes(size, h->slotBytes) != segment.size()) {
    throw runtime_error("shm: segment {} of group '{}' has {} bytes, expected {}", segmentName,
                        groupName, segment.size(), h->totalBytes);
  }
  const size_t slotBytes = h->slotBytes;
  ShmGroup g(std::move(segment), std::move(groupName), size);
  g.slotBytes_ = slotBytes;
  return g;
}

void ShmGroup::attach(int rank) {
  ranks_[rank].pid.store(static_cast<int32_t>(::getpid()), std::memory_order_release);
}

char* ShmGroup::slot(uint64_t round, int owner) const {
  const size_t set = round & 1U;
  return data_ + (set * static_cast<size_t>(size_ + 1) + static_cast<size_t>(owner)) * slotBytes_;
}

bool ShmGroup::everyoneReached(uint32_t epoch) const {
  for (int p = 0; p < size_; ++p) {
    const uint32_t e = ranks_[p].epoch.load(std::memory_order_seq_cst);
    if (static_cast<int32_t>(e - epoch) < 0) return false;
  }
  return true;
}

std::vector<int> ShmGroup::missing(uint32_t epoch) const {
  std::vector<int> out;
  for (int p = 0; p < size_; ++p) {
    const uint32_t e = ranks_[p].epoch.load(std::memory_order_acquire);
    if (static_cast<int32_t>(e - epoch) < 0) out.push_back(p);
  }
  return out;
}

void ShmGroup::checkPeersAlive(uint32_t epoch, const std::function<std::string()>& what) {
  for (int p : missing(epoch)) {
    const int pid = ranks_[p].pid.load(std::memory_order_acquire);
    if (processIsGone(pid)) {
      const std::string msg =
          format("{} in group '{}' (size {}): rank {} (pid {}) died before arriving", what(), name_,
                 size_, p, pid);
      fail(Failure::PeerLost, msg);
      throw CommPeerLostError(msg);
    }
  }
}

void ShmGroup::arrive(int rank, uint32_t epoch, Clock::time_point deadline, Milliseconds limit,
                      const std::function<std::string()>& what) {
  // Only the last rank to arrive wakes the sleepers: they wait for everyone, so waking them at
  // every arrival (as before) made each of k ranks wake k-1 sleepers per barrier, and with more
  // ranks than cores the woken ones took the cores from the ranks that still had work to do.
  // Sequentially consistent stores and loads of the epochs make this safe when the last ranks
  // arrive at once: of two ranks that each store their epoch and then load the other's, at least
  // one sees both, so at least one of them wakes the group.
  ranks_[rank].epoch.store(epoch, std::memory_order_seq_cst);
  if (everyoneReached(epoch)) {
    header_->wakeWord.fetch_add(1, std::memory_order_seq_cst);
    if (header_->sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&header_->wakeWord);
    return;
  }

  const auto start = Clock::now();
  const auto spinUntil = start + kSpinTime;
  bool spinning = spin_;
  auto nextLivenessCheck = start + kLivenessPeriod;
  for (unsigned i = 0;; ++i) {
    const uint32_t word = header_->wakeWord.load(std::memory_order_seq_cst);
    if (everyoneReached(epoch)) return;
    if (header_->failure.load(std::memory_order_acquire) != 0) throwIfFailed(false);
    if (spinning) {
      if (i % 64 != 0 || Clock::now() < spinUntil) {
        cpuRelax();
        continue;
      }
      spinning = false;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      const auto late = missing(epoch);
      if (late.empty()) continue;
      const std::string msg = timeoutMessage(what(), name_, size_, limit, late);
      fail(Failure::Timeout, msg);
      throw CommTimeoutError(msg);
    }
    if (now >= nextLivenessCheck) {
      checkPeersAlive(epoch, what);
      nextLivenessCheck = now + kLivenessPeriod;
    }
    const auto sleepFor = std::min(deadline, nextLivenessCheck) - now;
    header_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    futexWait(&header_->wakeWord, word,
              std::chrono::duration_cast<std::chrono::nanoseconds>(sleepFor));
    header_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void ShmGroup::fail(Failure kind, const std::string& message) {
  uint32_t expected = 0;
  if (header_->failureClaimed.compare_exchange_strong(expected, 1)) {
    const size_t n = std::min(message.size(), sizeof(header_->failureMessage) - 1);
    std::memcpy(header_->failureMessage, message.data(), n);
    header_->failureMessage[n] = '\0';
    header_->failure.store(static_cast<uint32_t>(kind), std::memory_order_release);
  }
  header_->wakeWord.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(&header_->wakeWord);
}

void ShmGroup::throwIfFailed(bool asAborted) const {
  const auto kind = static_cast<Failure>(header_->failure.load(std::memory_order_acquire));
  if (kind == Failure::None) return;
  const std::string message(header_->failureMessage);
  if (asAborted) {
    throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name_,
                           message);
  }
  switch (kind) {
    case Failure::Timeout: throw CommTimeoutError(message);
    case Failure::Mismatch: throw CommMismatchError(message);
    case Failure::PeerLost: throw CommPeerLostError(message);
    case Failure::Transfer:
    case Failure::None: break;
  }
  throw CommAbortedError(message);
}

}  // namespace xtrain::comm::shm
