#include "xtrain/dist.hpp"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "comm/job.hpp"
#include "common/launch_environment.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::dist {
namespace {

// Read once per process, by the job object (its constructor throws on a malformed environment and
// is retried at the next call).
const LaunchEnvironment& launch() {
  return comm::Job::current().launch();
}

}  // namespace

bool isPopdistEnvSet() {
  return launch().launcher != "none";
}
bool isDistributed() {
  return launch().isDistributed();
}
int64_t getNumInstances() {
  return launch().numInstances;
}
int64_t getInstanceIndex() {
  return launch().instanceIndex;
}
int64_t getLocalInstanceIndex() {
  return launch().localInstanceIndex;
}
int64_t getNumLocalReplicas() {
  return launch().numLocalReplicas;
}
int64_t getNumTotalReplicas() {
  return launch().numTotalReplicas;
}
int64_t getReplicaIndexOffset() {
  return launch().replicaIndexOffset;
}
int64_t getNumIpusPerReplica() {
  return launch().ipusPerReplica;
}
std::string getJobId() {
  return launch().jobId;
}

void configureSessionOptions(SessionOptions& options) {
  const LaunchEnvironment& e = launch();
  options.enableReplicatedGraphs = e.numLocalReplicas > 1;
  options.replicatedGraphCount = e.numLocalReplicas;
  options.enableDistributedReplicatedGraphs = e.numInstances > 1;
  options.globalReplicationFactor = e.numTotalReplicas;
  options.globalReplicaOffset = e.replicaIndexOffset;
}

std::shared_ptr<DeviceInfo> getDevice(int64_t ipusPerReplica) {
  const LaunchEnvironment& e = launch();
  const int64_t k = ipusPerReplica > 0 ? ipusPerReplica : e.ipusPerReplica;
  const int64_t n = k * e.numLocalReplicas;
  if (n < 1 || (n & (n - 1)) != 0) {
    throw error(
        "dist::getDevice: {} local replicas x {} IPUs per replica = {} IPUs, but simulated devices "
        "hold a power of two (1, 2, 4, ...)",
        e.numLocalReplicas, k, n);
  }
  return DeviceManager::createDeviceManager().acquireAvailableDevice(static_cast<int>(n));
}

// ---- preemption ----

namespace {

// The first preemption signal received (0: none). Written by the handler: a lock-free atomic.
std::atomic<int> gPreemptionSignal{0};
static_assert(std::atomic<int>::is_always_lock_free);
std::atomic<bool> gHandlersInstalled{false};

extern "C" void onPreemptionSignal(int sig) {
  int none = 0;
  gPreemptionSignal.compare_exchange_strong(none, sig);
}

void requireHandlers(const char* call) {
  if (!gHandlersInstalled.load()) {
    throw error(
        "dist::{}: call dist::handlePreemption() first (without it SIGUSR1 and SIGTERM end the "
        "process instead of requesting a stop)",
        call);
  }
}

}  // namespace

void handlePreemption() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = onPreemptionSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGUSR1, SIGTERM}) {
      if (::sigaction(sig, &sa, nullptr) != 0) {
        throw runtime_error("dist::handlePreemption: cannot install a handler for signal {}: {}",
                            sig, std::strerror(errno));
      }
    }
    gHandlersInstalled.store(true);
  });
}

bool preemptionRequested() {
  requireHandlers("preemptionRequested");
  return gPreemptionSignal.load() != 0;
}

int preemptionSignal() {
  return gPreemptionSignal.load();
}

bool preemptionAgreed() {
  requireHandlers("preemptionAgreed");
  // The highest signal number any instance received: SIGTERM (15) over SIGUSR1 (10). On the job's
  // world, which every instance reaches at the same point of its program.
  const auto value = static_cast<int>(
      comm::Job::current().maxOf(gPreemptionSignal.load(), "preemption agreement"));
  if (value == 0) return false;
  int none = 0;
  if (gPreemptionSignal.compare_exchange_strong(none, value)) {
    logging::session::info("preemption requested by another instance (signal {})", value);
  }
  return true;
}

}  // namespace xtrain::dist
