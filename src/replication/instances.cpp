#include "replication/instances.hpp"

#include <atomic>

#include "comm/backend.hpp"
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

}  // namespace xtrain::replication
