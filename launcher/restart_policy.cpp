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

FailureBlame blameFailure(const JobOutcome& outcome, const Topology& full,
                          const std::vector<int>& current) {
  FailureBlame blame;
  auto slotsOn = [&](const std::string& host) {
    std::vector<int> on;
    for (int s : current) {
      if (full.instances.at(static_cast<size_t>(s)).host == host) on.push_back(s);
    }
    return on;
  };
  if (!outcome.lostHost.empty()) {
    blame.slots = slotsOn(outcome.lostHost);
    if (!blame.slots.empty()) {
      blame.kind = BlameKind::HostLost;
      blame.host = outcome.lostHost;
      blame.clue = "mpirun lost contact with it";
      return blame;
    }
  }
  for (int i : outcome.didNotArrive) {
    if (i >= 0 && i < static_cast<int>(current.size())) {
      blame.slots.push_back(current[static_cast<size_t>(i)]);
    }
  }
  if (!blame.slots.empty()) {
    std::sort(blame.slots.begin(), blame.slots.end());
    blame.kind = BlameKind::DidNotArrive;
    const std::string& host = full.instances.at(static_cast<size_t>(blame.slots[0])).host;
    bool severalHosts = false;
    for (int s : current) {
      severalHosts = severalHosts || full.instances.at(static_cast<size_t>(s)).host != host;
    }
    if (severalHosts && slotsOn(host) == blame.slots) {
      blame.kind = BlameKind::HostLost;
      blame.host = host;
      blame.clue = "none of its instances arrived at a collective that the others waited for";
    }
    return blame;
  }
  if (outcome.instance && *outcome.instance >= 0 &&
      *outcome.instance < static_cast<int>(current.size())) {
    blame.kind = BlameKind::FirstToFail;
    blame.slots = {current[static_cast<size_t>(*outcome.instance)]};
  }
  return blame;
}

std::string describeSlots(const Topology& full, const std::vector<int>& slots) {
  std::string hosts;
  std::string ipus;
  std::string lastHost;
  for (int s : slots) {
    const InstancePlacement& p = full.instances.at(static_cast<size_t>(s));
    if (p.host != lastHost && hosts.find(p.host) == std::string::npos) {
      hosts += (hosts.empty() ? "" : ", ") + p.host;
    }
    lastHost = p.host;
    ipus += (ipus.empty() ? "" : ", ") + formatIpuIds(p.firstIpu, p.numIpus);
  }
  return format("slot{} {} ({}, IPUs {})", slots.size() == 1 ? "" : "s", listSlots(slots), hosts,
                ipus);
}

std::vector<int> SlotFailures::onFailure(const std::vector<int>& slots) {
  if (slots.empty()) return {};  // neither counts nor breaks the row
  row_ = last_ == slots ? row_ + 1 : 1;
  last_ = slots;
  if (row_ >= kFailuresToDropSlot) return slots;
  return {};
}

ShrinkPlan planShrink(const Topology& full, const std::vector<int>& current,
                      const std::vector<int>& failing, int minInstances, KeepGlobalBatch keep) {
  ShrinkPlan plan;
  auto isFailing = [&](int s) {
    return std::find(failing.begin(), failing.end(), s) != failing.end();
  };
  std::vector<int> rest;
  for (int s : current) {
    if (!isFailing(s)) rest.push_back(s);
  }
  int target = static_cast<int>(rest.size());
  if (keep != KeepGlobalBatch::No) {
    while (target > 0 && full.numInstances % target != 0) --target;
  }
  if (target < minInstances || target == 0) {
    plan.keep = current;
    plan.belowMinimum = true;
    return plan;
  }
  // Dropped first: the failing slots' host-mates (suspects too), then the highest-numbered.
  auto onBadHost = [&](int s) {
    const std::string& host = full.instances.at(static_cast<size_t>(s)).host;
    return std::any_of(failing.begin(), failing.end(), [&](int f) {
      return full.instances.at(static_cast<size_t>(f)).host == host;
    });
  };
  std::vector<int> order = rest;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const bool ha = onBadHost(a);
    const bool hb = onBadHost(b);
    if (ha != hb) return ha;
    return a > b;
  });
  const size_t extra = rest.size() - static_cast<size_t>(target);
  plan.alsoDropped.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(extra));
  std::sort(plan.alsoDropped.begin(), plan.alsoDropped.end());
  for (int s : rest) {
    if (std::find(plan.alsoDropped.begin(), plan.alsoDropped.end(), s) == plan.alsoDropped.end()) {
      plan.keep.push_back(s);
    }
  }
  return plan;
}

std::string listSlots(const std::vector<int>& slots) {
  std::string out;
  for (int s : slots) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out;
}

bool isRestartable(const JobOutcome& outcome, std::string& why) {
  switch (outcome.end) {
    case JobEnd::Success: why = "the job succeeded"; return false;
    case JobEnd::StartFailed: why = "the program could not be started"; return false;
    case JobEnd::Timeout: why = "the job reached --timeout"; return false;
    case JobEnd::Signal: why = "xrun received a signal that ends the job"; return false;
    case JobEnd::Preempted: why = "the job was preempted (run it again to continue)"; return false;
    case JobEnd::NotStarted: why = "xrun received a signal that ends the job"; return false;
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
