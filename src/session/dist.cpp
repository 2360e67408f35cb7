#include "xtrain/dist.hpp"

#include "common/launch_environment.hpp"
#include "xtrain/error.hpp"

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

}  // namespace xtrain::dist
