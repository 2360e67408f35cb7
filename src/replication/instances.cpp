#include "replication/instances.hpp"

#include <atomic>

#include "comm/communicator.hpp"
#include "comm/job.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::replication {

std::shared_ptr<comm::Communicator> joinInstances(const ReplicaLayout& layout) {
  if (layout.instances() == 1) return nullptr;
  comm::Job& job = comm::Job::current();
  if (job.instances() != layout.instances() || job.instance() != layout.instance()) {
    throw error(
        "the replication options place this process as instance {} of {} (globalReplicaOffset {} "
        "/ replicatedGraphCount {}, globalReplicationFactor {} / replicatedGraphCount), but it "
        "was launched as instance {} of {} ({}): start one instance per {} local replicas, or use "
        "dist::configureSessionOptions",
        layout.instance(), layout.instances(), layout.offset, layout.local, layout.global,
        job.instance(), job.instances(), job.launch().launcher, layout.local);
  }
  static std::atomic<int> sessionsJoined{0};
  const std::string name = format("replicas-{}", sessionsJoined.fetch_add(1));
  logging::replication::info(
      "instance {} of {} joins the replicas' communicator {} ({} replicas from {})", job.instance(),
      job.instances(), name, layout.local, layout.offset);
  return job.split(name);
}

}  // namespace xtrain::replication
