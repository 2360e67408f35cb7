#include "launcher/ipu_allocation.hpp"

#include <unistd.h>

#include "xtrain/error.hpp"

namespace xtrain::launcher {
namespace {

// Reserves every IPU of [first, first + size) and checks that none is attached; empty (nothing
// kept) when one is reserved or attached by someone else. Reserving before looking at the attach
// locks pairs with acquireAvailableDevice, which attaches before looking at reservations: of two
// racing for an IPU, at least one sees the other.
std::vector<std::unique_ptr<device::IpuLock>> tryReserveBlock(const device::PoolConfig& pool,
                                                              int first, int size,
                                                              const std::string& holder) {
  std::vector<std::unique_ptr<device::IpuLock>> taken;
  for (int ipu = first; ipu < first + size; ++ipu) {
    auto lock = device::IpuLock::tryReserve(pool.lockDir, ipu, holder);
    if (!lock) return {};
    taken.push_back(std::move(lock));
  }
  for (int ipu = first; ipu < first + size; ++ipu) {
    if (device::ipuHolder(pool.lockDir, ipu)) return {};
  }
  return taken;
}

std::vector<int> allIpus(int poolSize) {
  std::vector<int> out(static_cast<size_t>(poolSize));
  for (int i = 0; i < poolSize; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

}  // namespace

device::PoolConfig poolForJob(const EnvList& userEnv, const EnvLookup& lookup, int poolSize) {
  device::PoolConfig pool;
  pool.numIpus = poolSize;
  std::optional<std::string> dir = lookup("XTRAIN_IPU_LOCK_DIR");
  for (const auto& [name, value] : userEnv) {
    if (name == "XTRAIN_IPU_LOCK_DIR") dir = value;
  }
  if (dir && !dir->empty()) {
    pool.lockDir = *dir;
    pool.lockDirIsDefault = false;
  } else {
    pool.lockDir = "/tmp/xtrain-ipus-" + std::to_string(::getuid());
  }
  return pool;
}

IpuReservations reserveFreeIpus(const device::PoolConfig& pool, int count, int blockSize, int align,
                                const std::string& holder) {
  device::ensureLockDir(pool);
  std::vector<int> firsts;
  std::vector<std::unique_ptr<device::IpuLock>> held;
  for (int first = 0;
       first + blockSize <= pool.numIpus && static_cast<int>(firsts.size()) < count;) {
    auto block = tryReserveBlock(pool, first, blockSize, holder);
    if (block.empty()) {
      first += align;
      continue;
    }
    firsts.push_back(first);
    for (auto& lock : block) held.push_back(std::move(lock));
    first += blockSize;
  }
  if (static_cast<int>(firsts.size()) == count) return IpuReservations(firsts, std::move(held));

  const int found = static_cast<int>(firsts.size());
  held.clear();  // our own reservations must not show up among the busy IPUs
  const std::string busy = device::describeHolders(pool.lockDir, allIpus(pool.numIpus));
  throw runtime_error(
      "the job needs {} free blocks of {} IPU{} on this host but only {} {} free in the pool of {} "
      "(XTRAIN_NUM_IPUS; locks in {}): {}; wait for those jobs to end, or use fewer replicas",
      count, blockSize, blockSize == 1 ? "" : "s", found, found == 1 ? "is" : "are", pool.numIpus,
      pool.lockDir, busy.empty() ? std::string("they were busy a moment ago") : busy);
}

}  // namespace xtrain::launcher
