#include "common/cpu_contention.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace xtrain {

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The CPUs of the calling thread's affinity mask (all online ones when it cannot be read).
std::vector<int> affinityCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) {
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

}  // namespace

std::optional<double> runDelayOfSchedstat(const std::string& text) {
  std::istringstream in(text);
  unsigned long long onCpu = 0, delay = 0;
  if (!(in >> onCpu >> delay)) return std::nullopt;
  return static_cast<double>(delay) * 1e-9;
}

std::optional<double> spareSecondsOfProcStat(const std::string& text, const std::vector<int>& cpus,
                                             long ticksPerSecond, bool withNice) {
  if (ticksPerSecond <= 0) return std::nullopt;
  std::istringstream lines(text);
  std::string line;
  std::vector<bool> seen(cpus.size(), false);
  double ticks = 0;
  while (std::getline(lines, line)) {
    // "cpuN ..." lines only: "cpu " is the total, and other lines do not start with "cpu".
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') {
      continue;
    }
    std::istringstream in(line.substr(3));
    int cpu = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait)) return std::nullopt;
    const auto it = std::find(cpus.begin(), cpus.end(), cpu);
    if (it == cpus.end()) continue;
    seen[static_cast<size_t>(it - cpus.begin())] = true;
    ticks += static_cast<double>(idle + iowait + (withNice ? nice : 0));
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) return std::nullopt;
  return ticks / static_cast<double>(ticksPerSecond);
}

std::optional<CpuCounters> readCpuCounters() {
  CpuCounters c;
  c.when = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::directory_iterator tasks("/proc/self/task", ec);
  if (ec) return std::nullopt;
  for (const auto& task : tasks) {
    // A thread that ended since the listing has no file left: it simply does not count.
    if (const auto delay = runDelayOfSchedstat(readText(task.path().string() + "/schedstat"))) {
      c.runDelaySeconds += *delay;
    }
  }
  // Niced processes yield a CPU to this one, unless this one is niced too (then its own time is
  // in that column).
  errno = 0;
  const int ownNice = getpriority(PRIO_PROCESS, 0);
  const bool withNice = errno == 0 && ownNice <= 0;
  const auto spare = spareSecondsOfProcStat(readText("/proc/stat"), affinityCpus(),
                                            sysconf(_SC_CLK_TCK), withNice);
  if (!spare) return std::nullopt;
  c.spareCpuSeconds = *spare;
  return c;
}

CpuContention contentionBetween(const CpuCounters& earlier, const CpuCounters& later) {
  CpuContention c;
  c.seconds = std::chrono::duration<double>(later.when - earlier.when).count();
  if (c.seconds <= 0) return c;
  c.waitingThreads = std::max(0.0, later.runDelaySeconds - earlier.runDelaySeconds) / c.seconds;
  c.spareCpus = std::max(0.0, later.spareCpuSeconds - earlier.spareCpuSeconds) / c.seconds;
  return c;
}

std::optional<CpuContention> CpuContentionSampler::poll() {
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - last_->when < minInterval_) return std::nullopt;
  const std::optional<CpuCounters> counters = readCpuCounters();
  if (!counters) return std::nullopt;
  std::optional<CpuContention> result;
  if (last_) result = contentionBetween(*last_, *counters);
  last_ = counters;
  return result;
}

void CpuContentionSampler::start() {
  if (!last_) last_ = readCpuCounters();
}

}  // namespace xtrain
