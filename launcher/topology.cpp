#include "launcher/topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "common/env_value.hpp"
#include "device/ipu/ipu_pool.hpp"
#include "launcher/options.hpp"

namespace xtrain::launcher {

namespace {

bool isPowerOfTwo(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

// Up to `count` multiples of `step` nearest to `around` (>= step).
std::string nearbyMultiples(int around, int step) {
  int below = (around / step) * step;
  int above = below + step;
  std::ostringstream os;
  if (below >= step) os << below << " or ";
  os << above;
  return os.str();
}

std::string divisorsOf(int value) {
  std::ostringstream os;
  bool first = true;
  for (int d = 1; d <= value; ++d) {
    if (value % d == 0) {
      os << (first ? "" : ", ") << d;
      first = false;
    }
  }
  return os.str();
}

}  // namespace

int poolSizeFromEnvironment(const char* value) {
  if (value == nullptr || *value == '\0') return kDefaultPoolSize;
  // The library's bound and syntax (src/device/ipu/ipu_pool.cpp reads it the same way).
  try {
    return static_cast<int>(parseWholeNumber(value, "XTRAIN_NUM_IPUS", 1, device::kMaxPoolSize));
  } catch (const error& e) {
    throw UsageError(e.what());
  }
}

std::string formatIpuIds(int first, int count) {
  if (count == 1) return std::to_string(first);
  return std::to_string(first) + "-" + std::to_string(first + count - 1);
}

Topology planTopology(const TopologyRequest& request) {
  const int n = request.numInstances;
  const int k = request.ipusPerReplica;
  const int r = request.numReplicas.value_or(n);
  if (n < 1) throw UsageError("--num-instances must be at least 1, got {}", n);
  if (r < 1) throw UsageError("--num-replicas must be at least 1, got {}", r);
  if (k < 1) throw UsageError("--ipus-per-replica must be at least 1, got {}", k);
  if (r % n != 0) {
    throw UsageError(
        "--num-replicas {} cannot be split evenly over {} instances: use --num-replicas {} (a "
        "multiple of {}), "
        "or -n one of {} (the divisors of {})",
        r, n, nearbyMultiples(r, n), n, divisorsOf(r), r);
  }
  if (!isPowerOfTwo(k)) {
    int lower = 1;
    while (lower * 2 < k) lower *= 2;
    throw UsageError(
        "--ipus-per-replica {} is not a power of two (simulated devices hold 1, 2, 4, ... IPUs): "
        "use "
        "{} or {}",
        k, lower, lower * 2);
  }

  // A replica of several IPUs is a virtual graph of one device that holds all the instance's
  // replicas (the session gives each device IPUs / local replicas), and a simulated device holds
  // a power of two IPUs. With one IPU per replica a program may take a device per replica, so
  // any replica count stays allowed there.
  const int local = r / n;
  if (k > 1 && !isPowerOfTwo(local)) {
    int lower = 1;
    while (lower * 2 < local) lower *= 2;
    throw UsageError(
        "--ipus-per-replica {} with {} replicas per instance needs a device of {} IPUs per "
        "instance, but a simulated device holds a power of two IPUs: use --num-replicas {} or {} "
        "({} or {} per instance), or -n {} (one replica per instance)",
        k, local, local * k, lower * n, lower * 2 * n, lower, lower * 2, r);
  }

  Topology t;
  t.numInstances = n;
  t.numTotalReplicas = r;
  t.numLocalReplicas = r / n;
  t.ipusPerReplica = k;
  t.poolSize = request.poolSize;

  std::vector<std::string> hosts = request.hosts;
  if (hosts.empty()) hosts.push_back("localhost");
  if (static_cast<int>(hosts.size()) > n)
    hosts.resize(static_cast<size_t>(n));  // unused hosts are dropped
  const int numHosts = static_cast<int>(hosts.size());
  if (n % numHosts != 0) {
    throw UsageError(
        "{} instances cannot be spread evenly over {} hosts: use -n a multiple of {}, e.g. {}", n,
        numHosts, numHosts, nearbyMultiples(n, numHosts));
  }
  t.hosts = hosts;
  t.instancesPerHost = n / numHosts;

  const int ipusPerInstance = t.numLocalReplicas * k;
  const long ipusPerHost = static_cast<long>(t.instancesPerHost) * ipusPerInstance;
  if (ipusPerHost > t.poolSize) {
    int maxReplicasPerHost = t.poolSize / k;
    throw UsageError(
        "the layout needs {} simulated IPUs per host ({} instances x {} replicas x {} IPUs) but "
        "the pool has {} "
        "(XTRAIN_NUM_IPUS): use at most {} replicas of {} IPUs per host, or raise XTRAIN_NUM_IPUS "
        "to {}",
        ipusPerHost, t.instancesPerHost, t.numLocalReplicas, k, t.poolSize, maxReplicasPerHost, k,
        ipusPerHost);
  }

  for (int i = 0; i < n; ++i) {
    InstancePlacement p;
    p.index = i;
    p.localIndex = i % t.instancesPerHost;
    p.host = hosts[static_cast<size_t>(i / t.instancesPerHost)];
    p.replicaOffset = i * t.numLocalReplicas;
    p.firstIpu = p.localIndex * ipusPerInstance;
    p.numIpus = ipusPerInstance;
    t.instances.push_back(p);
  }
  return t;
}

Topology topologyOfSlots(const Topology& full, const std::vector<int>& slots) {
  Topology t = full;
  t.instances.clear();
  t.hosts.clear();
  t.instancesPerHost = 0;
  t.numInstances = static_cast<int>(slots.size());
  t.numTotalReplicas = t.numInstances * full.numLocalReplicas;
  for (int slot : slots) {
    InstancePlacement p = full.instances.at(static_cast<size_t>(slot));
    p.index = static_cast<int>(t.instances.size());
    p.replicaOffset = p.index * full.numLocalReplicas;
    p.localIndex = 0;
    for (const auto& q : t.instances) p.localIndex += q.host == p.host ? 1 : 0;
    if (p.localIndex == 0) t.hosts.push_back(p.host);
    t.instancesPerHost = std::max(t.instancesPerHost, p.localIndex + 1);
    t.instances.push_back(p);
  }
  return t;
}

std::vector<std::string> readHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read --hostfile '{}'", path);
  std::vector<std::string> hosts;
  std::string line;
  while (std::getline(in, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host;
    if (words >> host) hosts.push_back(host);
  }
  if (hosts.empty())
    throw UsageError("--hostfile '{}' names no hosts (one per line: 'host [slots=N]')", path);
  return hosts;
}

std::string describeTopology(const Topology& t) {
  std::ostringstream os;
  const int used = t.numTotalReplicas * t.ipusPerReplica;
  os << "xrun topology: " << t.numInstances << (t.numInstances == 1 ? " instance" : " instances")
     << " x " << t.numLocalReplicas << " local "
     << (t.numLocalReplicas == 1 ? "replica" : "replicas") << " = " << t.numTotalReplicas
     << (t.numTotalReplicas == 1 ? " replica" : " replicas") << ", " << t.ipusPerReplica
     << (t.ipusPerReplica == 1 ? " IPU" : " IPUs") << " per replica, " << used << " IPUs on "
     << t.hosts.size() << (t.hosts.size() == 1 ? " host" : " hosts") << " (pool of " << t.poolSize
     << " per host)\n";
  if (!t.ipuNote.empty()) os << "  " << t.ipuNote << "\n";
  os << "  " << std::left << std::setw(10) << "instance" << std::setw(16) << "host" << std::setw(7)
     << "local" << std::setw(12) << "replicas"
     << "IPUs\n";
  for (const auto& p : t.instances) {
    std::string replicas = t.numLocalReplicas == 1
                               ? std::to_string(p.replicaOffset)
                               : std::to_string(p.replicaOffset) + "-" +
                                     std::to_string(p.replicaOffset + t.numLocalReplicas - 1);
    os << "  " << std::setw(10) << p.index << std::setw(16) << p.host << std::setw(7)
       << p.localIndex << std::setw(12) << replicas << formatIpuIds(p.firstIpu, p.numIpus) << "\n";
  }
  return os.str();
}

}  // namespace xtrain::launcher
