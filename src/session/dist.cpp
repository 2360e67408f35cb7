#include "xtrain/dist.hpp"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "comm/communicator.hpp"
#include "comm/world.hpp"
#include "common/launch_environment.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::dist {

bool isPopdistEnvSet() {
  return readLaunchEnvironment().launcher != "none";
}
bool isDistributed() {
  return readLaunchEnvironment().isDistributed();
}
int64_t getNumInstances() {
  return readLaunchEnvironment().numInstances;
}
int64_t getInstanceIndex() {
  return readLaunchEnvironment().instanceIndex;
}
int64_t getLocalInstanceIndex() {
  return readLaunchEnvironment().localInstanceIndex;
}
int64_t getNumLocalReplicas() {
  return readLaunchEnvironment().numLocalReplicas;
}
int64_t getNumTotalReplicas() {
  return readLaunchEnvironment().numTotalReplicas;
}
int64_t getReplicaIndexOffset() {
  return readLaunchEnvironment().replicaIndexOffset;
}
int64_t getNumIpusPerReplica() {
  return readLaunchEnvironment().ipusPerReplica;
}

void configureSessionOptions(SessionOptions& options) {
  const LaunchEnvironment e = readLaunchEnvironment();
  options.enableReplicatedGraphs = e.numLocalReplicas > 1;
  options.replicatedGraphCount = e.numLocalReplicas;
  options.enableDistributedReplicatedGraphs = e.numInstances > 1;
  options.globalReplicationFactor = e.numTotalReplicas;
  options.globalReplicaOffset = e.replicaIndexOffset;
}

std::shared_ptr<DeviceInfo> getDevice(int64_t ipusPerReplica) {
  const LaunchEnvironment e = readLaunchEnvironment();
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

// The instances' communicator for the agreement, joined at the first preemptionAgreed(). A
// function-local static: created after the session's communicators (and the MPI runtime) and so
// destroyed before them at exit.
struct Agreement {
  std::mutex mutex;
  std::shared_ptr<comm::Communicator> communicator;
};

Agreement& agreement() {
  static Agreement a;
  return a;
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
  const LaunchEnvironment env = readLaunchEnvironment();
  if (env.numInstances <= 1) return gPreemptionSignal.load() != 0;
  Agreement& a = agreement();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (!a.communicator) {
    comm::WorldOptions options;
    options.name = "preemption";
    a.communicator = comm::createWorldCommunicator(options);
  }
  // The highest signal number any instance received: SIGTERM (15) over SIGUSR1 (10).
  int32_t value = gPreemptionSignal.load();
  comm::AllReduceOptions reduce;
  reduce.op = CollectiveOperator::Max;
  reduce.debugName = "preemption agreement";
  a.communicator->allReduceSync(comm::viewOf(&value, 1, DataType::INT32), reduce);
  if (value == 0) return false;
  int none = 0;
  if (gPreemptionSignal.compare_exchange_strong(none, value)) {
    logging::session::info("preemption requested by another instance (signal {})", value);
  }
  return true;
}

}  // namespace xtrain::dist
