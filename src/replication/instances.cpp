#include "replication/instances.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "comm/backend.hpp"
#include "comm/communicator.hpp"
#include "comm/host.hpp"
#include "comm/world.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::replication {

std::shared_ptr<comm::Communicator> joinInstances(const ReplicaLayout& layout) {
  if (layout.instances() == 1) return nullptr;
  comm::CommConfig c;
  c.store = comm::createJobStore();
  c.rank = layout.instance();
  c.size = static_cast<int>(layout.instances());
  static std::atomic<int> sessionsJoined{0};
  c.name = format("replicas-{}", sessionsJoined.fetch_add(1));
  logging::replication::info(
      "instance {} of {} joins the replicas' communicator ({} replicas from {})", c.rank, c.size,
      layout.local, layout.offset);
  return comm::createCommunicator(c);
}

int instancesOnThisHost(comm::Communicator* instances) {
  if (instances == nullptr) return 1;
  // A hash stands for the identity: a collision would only merge two hosts' counts (more instances
  // assumed on this host, fewer threads each), never fail.
  auto mine = static_cast<int64_t>(std::hash<std::string>{}(comm::hostIdentity()));
  std::vector<int64_t> all(static_cast<size_t>(instances->size()));
  comm::AllGatherOptions o;
  o.debugName = "instancesOnThisHost";
  instances->allGatherSync(comm::BufferView{&mine, 1, DataType::INT64},
                           comm::BufferView{all.data(), all.size(), DataType::INT64}, o);
  return static_cast<int>(std::count(all.begin(), all.end(), mine));
}

}  // namespace xtrain::replication
