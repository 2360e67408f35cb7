// The instances' communicator: one rank per instance of a job, over which the replication layer
// exchanges what the instances' replicas share.
#pragma once
#pragma GCC visibility push(default)

#include <memory>

#include "replication/replica_layout.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::replication {

// A split of the job's world (comm/job.hpp) for one session's replicas, in which this instance is
// rank layout.instance() of layout.instances(). Every instance must call it for each of its
// sessions in the same order: the n-th call of each instance meets the others' n-th call (a job may
// create several sessions, one after another). Null when the layout has one instance. Throws
// xtrain::error when the layout does not place this instance where the launcher did (the
// replication options and the launch environment disagree).
std::shared_ptr<comm::Communicator> joinInstances(const ReplicaLayout& layout);

}  // namespace xtrain::replication

#pragma GCC visibility pop
