#include "common/usable_cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>

namespace xtrain {

namespace {

std::optional<int> quotaCpus(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<int>(std::max<int64_t>(1, (quota + period - 1) / period));
}

std::optional<int64_t> parseCount(const std::string& text) {
  std::istringstream in(text);
  int64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The cgroup path of this process for `controller` ("" for the unified v2 hierarchy) from
// /proc/self/cgroup ("4:cpu,cpuacct:/a/b" or "0::/a/b"); nullopt when there is none.
std::optional<std::string> cgroupPath(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const bool match =
        controller.empty()
            ? controllers.empty()
            : ("," + controllers + ",").find("," + controller + ",") != std::string::npos;
    if (match) return line.substr(b + 1);
  }
  return std::nullopt;
}

// The quota of the process's cgroup, v2 then v1, at the usual mount points (inside a container
// the process's cgroup is the namespace's root, "/").
std::optional<int> cgroupQuotaCpus() {
  if (const auto path = cgroupPath("")) {
    for (const std::string root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
      const std::string line = readFirstLine(root + *path + "/cpu.max");
      if (!line.empty()) return cpusOfCgroupV2Max(line);
    }
  }
  if (const auto path = cgroupPath("cpu")) {
    for (const std::string root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      const std::string quota = readFirstLine(root + *path + "/cpu.cfs_quota_us");
      const std::string period = readFirstLine(root + *path + "/cpu.cfs_period_us");
      if (!quota.empty() && !period.empty()) return cpusOfCgroupV1Quota(quota, period);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> cpusOfCgroupV2Max(const std::string& text) {
  std::istringstream in(text);
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  const auto q = parseCount(quota), p = parseCount(period);
  if (!q || !p) return std::nullopt;
  return quotaCpus(*q, *p);
}

std::optional<int> cpusOfCgroupV1Quota(const std::string& quota, const std::string& period) {
  const auto q = parseCount(quota), p = parseCount(period);
  if (!q || !p) return std::nullopt;
  return quotaCpus(*q, *p);
}

int usableCpus() {
  int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  // The quota is read once: it is the container's, fixed for the process's life.
  static const std::optional<int> quota = cgroupQuotaCpus();
  if (quota) cpus = std::min(cpus, *quota);
  return cpus;
}

}  // namespace xtrain
