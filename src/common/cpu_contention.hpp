// CpuContention: what the kernel's own accounting says about the CPUs this process may use, over
// an interval of wall time: how many of the process's threads were, on average, runnable but
// waiting for a CPU (their run delay, /proc/self/task/*/schedstat), and how many of its usable
// CPUs (its affinity mask) were spare (/proc/stat): idle, or running processes of a lower priority
// (a positive nice value, counted only when this process has none), which yield a CPU to it.
// AdaptiveKernelThreads reads it so as to probe one kernel thread more only when a CPU was free to
// take it, and one thread less at once when its threads queued for the CPUs (issue 32: a probe up
// beside a busy neighbour cost 5-6 steps).
//
// Both sources are cumulative counters: a CpuCounters holds their values at one moment, and
// contentionBetween() turns two of them into averages over the time between. Threads that ended
// in between take their delay with them: a negative difference counts as none.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace xtrain {

struct CpuCounters {
  std::chrono::steady_clock::time_point when;
  double runDelaySeconds = 0;  // summed over the process's threads
  double spareCpuSeconds = 0;  // summed over the usable CPUs: idle, iowait (and nice)
};

struct CpuContention {
  double seconds = 0;         // the interval's wall time
  double waitingThreads = 0;  // the process's threads waiting for a CPU, on average
  double spareCpus = 0;       // usable CPUs spare, on average
};

// nullopt when /proc/self/task or /proc/stat cannot be read (not Linux, or /proc not mounted).
std::optional<CpuCounters> readCpuCounters();
CpuContention contentionBetween(const CpuCounters& earlier, const CpuCounters& later);

// Reads the counters at most every `minInterval`; poll() returns the contention since the
// previous reading when one is due, nullopt otherwise (or when /proc cannot be read).
class CpuContentionSampler {
 public:
  explicit CpuContentionSampler(std::chrono::milliseconds minInterval)
      : minInterval_(minInterval) {}
  std::optional<CpuContention> poll();
  // Takes the first reading now, if there is none yet (the start of what the first poll covers).
  void start();

 private:
  std::chrono::milliseconds minInterval_;
  std::optional<CpuCounters> last_;
};

// The parts, for tests. The run delay, in seconds, of one /proc/<pid>/task/<tid>/schedstat text
// ("<on-cpu ns> <run-delay ns> <slices>"; nullopt for other text).
std::optional<double> runDelayOfSchedstat(const std::string& text);
// The idle and iowait seconds of `cpus` in a /proc/stat text ("cpuN user nice system idle iowait
// ..." in clock ticks), with their nice seconds when `withNice`; nullopt when a CPU's line is
// missing or malformed.
std::optional<double> spareSecondsOfProcStat(const std::string& text, const std::vector<int>& cpus,
                                             long ticksPerSecond, bool withNice);

}  // namespace xtrain

#pragma GCC visibility pop
