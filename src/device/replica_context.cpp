#include "device/replica_context.hpp"

#include <exception>

namespace xtrain::device {

namespace {

// Defined here, in one shared library, so every module sees the same variable.
thread_local const ReplicaContext* tCurrent = nullptr;

}  // namespace

const ReplicaContext* currentReplica() {
  return tCurrent;
}

ReplicaScope::ReplicaScope(ReplicaCollectives& collectives, int64_t localReplica, bool concurrent)
    : context_{&collectives, localReplica, concurrent},
      previous_(tCurrent),
      uncaught_(std::uncaught_exceptions()) {
  collectives.enter(localReplica, concurrent);
  tCurrent = &context_;
}

ReplicaScope::~ReplicaScope() {
  tCurrent = previous_;
  // Neither call throws; a destructor must not.
  if (std::uncaught_exceptions() > uncaught_)
    context_.collectives->replicaFailed(context_.localReplica);
  context_.collectives->leave(context_.localReplica);
}

ReplicaHelperScope::ReplicaHelperScope(const ReplicaContext* context) : previous_(tCurrent) {
  if (context != nullptr) tCurrent = context;
}

ReplicaHelperScope::~ReplicaHelperScope() {
  tCurrent = previous_;
}

}  // namespace xtrain::device
