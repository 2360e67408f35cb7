// The simulated IPUs of a job's instances on this host, chosen from the ones free now.
//
// xrun used to hand out IPUs from 0 whatever ran already, so a second job on the host (or a plain
// xtrain holding IPU 0) failed with "IPU 0 is held by process N". The pool's cross-process locks
// (src/device/ipu/ipu_pool.hpp) tell which IPUs are attached; xrun also reserves the IPUs it picks
// (one lock file per IPU, held for the whole job), so two xruns starting at once, or a plain
// xtrain starting while the instances load, never pick the same ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device/ipu/ipu_pool.hpp"
#include "launcher/environment.hpp"

namespace xtrain::launcher {

// The pool the instances will see: XTRAIN_IPU_LOCK_DIR from -x, else xrun's own, else the default
// (/tmp/xtrain-ipus-<uid>); `poolSize` from the plan (XTRAIN_NUM_IPUS).
device::PoolConfig poolForJob(const EnvList& userEnv, const EnvLookup& lookup, int poolSize);

// IPU reservations held while the object lives (the kernel drops them if xrun dies).
class IpuReservations {
 public:
  IpuReservations() = default;
  IpuReservations(std::vector<int> firstIpus, std::vector<std::unique_ptr<device::IpuLock>> held)
      : firstIpus_(std::move(firstIpus)), held_(std::move(held)) {}
  // The first IPU of each block, in the order asked for.
  const std::vector<int>& firstIpus() const { return firstIpus_; }

 private:
  std::vector<int> firstIpus_;
  std::vector<std::unique_ptr<device::IpuLock>> held_;
};

// Reserves `count` blocks of `blockSize` IPUs, each starting at a multiple of `align`, whose IPUs
// are neither attached nor reserved now: the lowest such blocks. `holder` is recorded for other
// processes' messages ("xrun job J (process P)"). Throws xtrain::runtime_error when fewer are free,
// naming who holds the busy IPUs.
IpuReservations reserveFreeIpus(const device::PoolConfig& pool, int count, int blockSize, int align,
                                const std::string& holder);

}  // namespace xtrain::launcher
