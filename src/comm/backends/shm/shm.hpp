// The shm backend: ranks are processes (or threads) on one host; collectives move data through a
// POSIX shared-memory segment per group.
#pragma once
#pragma GCC visibility push(default)

#include <memory>

#include "comm/backend.hpp"

namespace xtrain::comm::shm {

std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

}  // namespace xtrain::comm::shm

#pragma GCC visibility pop
