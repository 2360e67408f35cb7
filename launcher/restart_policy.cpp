#include "launcher/restart_policy.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "xtrain/format.hpp"

namespace xtrain::launcher {

int RestartBudget::counted(double now) const {
  if (!window_) return static_cast<int>(restarts_.size());
  return static_cast<int>(std::count_if(restarts_.begin(), restarts_.end(),
                                        [&](double t) { return t > now - *window_; }));
}

std::optional<int> RestartBudget::onFailure(double now) {
  const int used = counted(now);
  if (used >= max_) return std::nullopt;
  restarts_.push_back(now);
  return used + 1;
}

bool isRestartable(const JobOutcome& outcome, std::string& why) {
  switch (outcome.end) {
    case JobEnd::Success: why = "the job succeeded"; return false;
    case JobEnd::StartFailed: why = "the program could not be started"; return false;
    case JobEnd::Timeout: why = "the job reached --timeout"; return false;
    case JobEnd::Signal: why = "xrun received a signal that ends the job"; return false;
    case JobEnd::Preempted: why = "the job was preempted (run it again to continue)"; return false;
    case JobEnd::InstanceFailed: break;
  }
  if (outcome.forwardedSignal != 0) {
    why = format(
        "xrun forwarded {} during the attempt (Slurm's warning before preemption); the "
        "job ends so that the scheduler can requeue it",
        signalName(outcome.forwardedSignal));
    return false;
  }
  if (outcome.exitCode == kNotRestartedUsageCode) {
    why = "exit code 2 is a usage error (a bad option or input), which a restart would repeat";
    return false;
  }
  return true;
}

std::string attemptRendezvousDir(const std::string& base, int restartCount) {
  if (base.empty() || restartCount == 0) return base;
  return base + "-restart" + std::to_string(restartCount);
}

std::string shmSegmentPrefix(const std::string& jobId) {
  // As the shm backend names them (src/comm/backends/shm/communicator.cpp, segmentName):
  // "/xtrain-<first 48 characters of the job id, others than [A-Za-z0-9_-] made '_'>-<pid>-<n>".
  std::string safe;
  for (char c : jobId.substr(0, 48)) {
    safe += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_') ? c : '_';
  }
  return "xtrain-" + safe + "-";
}

int removeJobSegments(const std::string& jobId, const std::string& shmDir) {
  const std::string prefix = shmSegmentPrefix(jobId);
  std::error_code ec;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(shmDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // "<prefix><pid>-<n>": the rest after the prefix must be digits and one '-', so another job
    // whose id merely starts like this one is never touched.
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dash = rest.find('-');
    const bool digits =
        dash != std::string::npos && dash > 0 && dash + 1 < rest.size() &&
        std::all_of(
            rest.begin(), rest.end(),
            [](char c) { return c == '-' || std::isdigit(static_cast<unsigned char>(c)) != 0; }) &&
        rest.find('-', dash + 1) == std::string::npos;
    if (digits) names.push_back(name);
  }
  int removed = 0;
  for (const auto& name : names) {
    if (shmDir == "/dev/shm") {
      if (::shm_unlink(("/" + name).c_str()) == 0) ++removed;
    } else if (std::filesystem::remove(std::filesystem::path(shmDir) / name, ec)) {
      ++removed;
    }
  }
  return removed;
}

}  // namespace xtrain::launcher
