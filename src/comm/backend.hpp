// Backends by name: a registry of factories and the run-time choice (XTRAIN_COMM_BACKEND).
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/store.hpp"

namespace xtrain::comm {

// What every rank passes to create the world communicator of a job.
struct CommConfig {
  std::shared_ptr<Store> store;  // rendezvous; shared by all ranks (required)
  int rank = 0;
  int size = 1;
  std::string name = "world";  // group name in messages; one communicator per name and store
  std::optional<Milliseconds> timeout;  // default for collectives; unset: defaultTimeout()
};

// Creates this rank's communicator. Called by every rank with the same store, size and name. Waits
// (bounded by the timeout) for the rendezvous.
using BackendFactory = std::function<std::shared_ptr<Communicator>(const CommConfig&)>;

// Registers a backend; throws xtrain::error if the name is taken. Thread-safe. The built-in
// backends ("inproc") are always registered.
void registerBackend(const std::string& name, BackendFactory factory);
// The registered names, sorted.
std::vector<std::string> backendNames();

// The backend a request names: an empty request reads XTRAIN_COMM_BACKEND (unset or empty:
// "auto"). Returns a registered name or "auto". Throws xtrain::error for an unknown name, listing
// the known ones.
std::string resolveBackend(std::string_view requested = "");

// Validates the config (store set, 0 <= rank < size) and calls the backend's factory. "auto"
// decides through the store (every rank publishes its host and process): inproc for threads of
// one process, shm for processes on one host, mpi under mpirun/srun, gloo otherwise.
std::shared_ptr<Communicator> createCommunicator(const CommConfig& config,
                                                 std::string_view backend = "");

}  // namespace xtrain::comm

#pragma GCC visibility pop
