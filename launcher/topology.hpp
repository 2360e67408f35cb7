// Topology planning: which instance runs where, with which replicas and which simulated IPUs.
//
// Pure arithmetic; throws UsageError (launcher/options.hpp) for impossible layouts, saying what
// would work. Instances are spread over hosts in blocks (instances 0..P-1 on the first host, ...).
// On each host the pool of simulated IPUs is numbered from 0, and the instance with local index l
// gets the aligned range [l*L*K, (l+1)*L*K) where L is the local replica count and K the IPUs per
// replica.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace xtrain::launcher {

inline constexpr int kDefaultPoolSize = 64;  // XTRAIN_NUM_IPUS default (docs/devices.md)

struct TopologyRequest {
  int numInstances = 1;
  std::optional<int> numReplicas;  // default numInstances
  int ipusPerReplica = 1;
  std::vector<std::string> hosts;   // empty: this host only
  int poolSize = kDefaultPoolSize;  // simulated IPUs per host
};

struct InstancePlacement {
  int index = 0;       // global instance index
  int localIndex = 0;  // index among the instances on its host
  std::string host;
  int replicaOffset = 0;  // first global replica index
  int firstIpu = 0;       // first pool IPU on its host
  int numIpus = 0;        // numLocalReplicas * ipusPerReplica
};

struct Topology {
  int numInstances = 0;
  int numTotalReplicas = 0;
  int numLocalReplicas = 0;  // per instance (uniform)
  int ipusPerReplica = 0;
  int poolSize = 0;
  int instancesPerHost = 0;
  std::vector<std::string> hosts;  // one entry per host used ("localhost" when none were given)
  std::vector<InstancePlacement> instances;
  std::string ipuNote;  // where the IPUs came from, a line of describeTopology() when not empty
};

Topology planTopology(const TopologyRequest& request);

// The layout of a shrunk job (xrun --min-instances): the instances of `full` whose indices are
// `slots` (ascending), renumbered 0..slots.size()-1 in that order. Each keeps its host and IPUs;
// its local index is recounted among the kept instances of its host, its replica offset from its
// new index. instancesPerHost becomes the most instances any host keeps; hosts with none are
// dropped.
Topology topologyOfSlots(const Topology& full, const std::vector<int>& slots);

// XTRAIN_NUM_IPUS: nullptr/empty -> kDefaultPoolSize; otherwise a whole number from 1 to
// device::kMaxPoolSize (common/env_value.hpp), else UsageError.
int poolSizeFromEnvironment(const char* value);

// "4" for one IPU, "4-7" for a range.
std::string formatIpuIds(int first, int count);

// Hostfile lines: "host [slots=N] ..."; '#' starts a comment. Throws UsageError when unreadable or
// empty.
std::vector<std::string> readHostfile(const std::string& path);

// The --print-topology table.
std::string describeTopology(const Topology& topology);

}  // namespace xtrain::launcher
