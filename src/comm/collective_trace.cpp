#include "comm/collective_trace.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/env_switch.hpp"
#include "common/launch_environment.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm {

int64_t monotonicNanoseconds() {
  // The coarse clock (the kernel's last tick, a few ms) costs a quarter of the precise one and is
  // plenty for a report in tenths of seconds; it reads CLOCK_MONOTONIC's time line.
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

void copyName(char* out, size_t capacity, std::string_view name) {
  const size_t n = std::min(name.size(), capacity - 1);
  std::memcpy(out, name.data(), n);
  out[n] = '\0';
}

std::unique_ptr<CollectiveTrace> openProcessTrace() {
  if (!readBoolSwitch("XTRAIN_COMM_TRACE", true)) return nullptr;
  try {
    const LaunchEnvironment env = readLaunchEnvironment();
    if (!env.rendezvousDir || env.rendezvousDir->empty()) return nullptr;
    return CollectiveTrace::create(*env.rendezvousDir + "/" + trace::fileName(env.instanceIndex),
                                   env.instanceIndex);
  } catch (const std::exception& e) {
    logging::comm::warn("no collective trace for xrun's hang report: {}", e.what());
    return nullptr;
  }
}

}  // namespace

CollectiveTrace* CollectiveTrace::process() {
  // Never unmapped: a communicator destroyed during static destruction, or a collective still
  // running on another thread at exit, may record after this function's statics are gone.
  static CollectiveTrace* const trace = openProcessTrace().release();
  return trace;
}

std::unique_ptr<CollectiveTrace> CollectiveTrace::create(const std::string& path, int instance) {
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0 && errno == EEXIST) {
    // An earlier process of this instance (a test that runs twice in one directory): start anew.
    ::unlink(path.c_str());
    fd = ::open(path.c_str(), flags, 0600);
  }
  if (fd < 0) throw runtime_error("cannot create {}: {}", path, std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(trace::kFileSize)) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    throw runtime_error("cannot size {}: {}", path, std::strerror(e));
  }
  void* base = ::mmap(nullptr, trace::kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::unlink(path.c_str());
    throw runtime_error("cannot map {}: {}", path, std::strerror(e));
  }
  // The file is zero-filled: every slot is Empty with an even version. The magic comes last, so a
  // reader never takes a half-made header for a valid one.
  auto* h = static_cast<trace::Header*>(base);
  h->version = trace::kVersion;
  h->slots = trace::kSlots;
  h->instance = instance;
  h->pid = static_cast<int32_t>(::getpid());
  h->createdNs = monotonicNanoseconds();
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(h->magic, trace::kMagic, sizeof h->magic);
  return std::unique_ptr<CollectiveTrace>(new CollectiveTrace(path, base));
}

CollectiveTrace::CollectiveTrace(std::string path, void* base)
    : path_(std::move(path)), base_(base) {}

CollectiveTrace::~CollectiveTrace() {
  if (base_ != nullptr) ::munmap(base_, trace::kFileSize);
}

uint64_t CollectiveTrace::enter(const std::string& group, int rank, int size, const char* op,
                                uint64_t seq, uint64_t bytes, const std::string& label) {
  auto* h = static_cast<trace::Header*>(base_);
  const uint64_t ticket = __atomic_fetch_add(&h->claims, 1, __ATOMIC_RELAXED);
  trace::Slot& s = trace::slotsOf(base_)[ticket % trace::kSlots];
  trace::beginWrite(s);
  __atomic_store_n(&s.ticket, ticket, __ATOMIC_RELAXED);
  s.seq = seq;
  s.bytes = bytes;
  s.startNs = monotonicNanoseconds();
  s.endNs = 0;
  s.state = static_cast<uint32_t>(trace::State::Entered);
  s.failure = static_cast<uint32_t>(trace::Failure::None);
  s.rank = rank;
  s.size = size;
  copyName(s.op, sizeof s.op, op);
  copyName(s.group, sizeof s.group, group);
  copyName(s.label, sizeof s.label, label);
  trace::endWrite(s);
  return ticket;
}

void CollectiveTrace::end(uint64_t ticket, trace::State state, trace::Failure failure) {
  trace::Slot& s = trace::slotsOf(base_)[ticket % trace::kSlots];
  if (__atomic_load_n(&s.ticket, __ATOMIC_RELAXED) != ticket) return;
  trace::beginWrite(s);
  s.endNs = monotonicNanoseconds();
  s.state = static_cast<uint32_t>(state);
  s.failure = static_cast<uint32_t>(failure);
  trace::endWrite(s);
}

}  // namespace xtrain::comm
