// How many CPUs this process may keep busy: the CPUs of its affinity mask (taskset, a Slurm CPU
// binding, a container's cpuset), lowered to its CPU bandwidth quota rounded up (cgroup v2
// cpu.max, cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us: a container's `--cpus`). Sizing thread
// counts from std::thread::hardware_concurrency() instead counts the whole host, so that a
// process bound to one core starts a team per core it may not use, and its threads wait on each
// other for the one core they share.
#pragma once
#pragma GCC visibility push(default)

#include <optional>
#include <string>

namespace xtrain {

// At least 1. The calling thread's affinity is read at each call (it may change); the quota once.
int usableCpus();

// The CPUs a quota allows, rounded up, from the text of cgroup v2's cpu.max ("max 100000" or
// "150000 100000"); nullopt for no limit or text that is not a quota.
std::optional<int> cpusOfCgroupV2Max(const std::string& text);
// The same from cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us (quota -1: no limit).
std::optional<int> cpusOfCgroupV1Quota(const std::string& quota, const std::string& period);

}  // namespace xtrain

#pragma GCC visibility pop
