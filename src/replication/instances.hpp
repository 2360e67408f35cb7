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

// Joins the other instances of the job (through the store the launcher prepared, see
// comm/world.hpp) as rank layout.instance() of layout.instances(). Every instance must call it for
// each of its sessions in the same order: the n-th call of each instance meets the others' n-th
// call (a job may create several sessions, one after another). Null when the job has one instance.
std::shared_ptr<comm::Communicator> joinInstances(const ReplicaLayout& layout);

// How many of the job's instances run on this host, this one included (1 without a communicator):
// one all-gather of each instance's host identity, so every instance must call it at the same point
// of its collective order (right after joinInstances). The instances of a host share its cores.
int instancesOnThisHost(comm::Communicator* instances);

}  // namespace xtrain::replication

#pragma GCC visibility pop
