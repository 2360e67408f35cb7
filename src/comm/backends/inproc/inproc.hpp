// The inproc backend: ranks are threads of one process; the reference implementation of the comm
// layer.
#pragma once
#pragma GCC visibility push(default)

#include <memory>

#include "comm/backend.hpp"

namespace xtrain::comm::inproc {

// Rank 0 creates the group and publishes its id in the store (key "inproc/<name>/id"); the other
// ranks look it up in a process-wide table, then all ranks wait (bounded by the timeout) until
// every rank joined. Throws xtrain::error when the store belongs to another process's ranks or the
// name was used before.
std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

}  // namespace xtrain::comm::inproc

#pragma GCC visibility pop
