// The world communicator of a job: one rank per instance (process), formed from the launcher's
// environment (common/launch_environment.hpp).
#pragma once
#pragma GCC visibility push(default)

#include <memory>
#include <optional>
#include <string>

#include "comm/backend.hpp"
#include "common/launch_environment.hpp"

namespace xtrain::comm {

struct WorldOptions {
  std::string backend;                  // "" reads XTRAIN_COMM_BACKEND (default "auto")
  std::optional<Milliseconds> timeout;  // unset: XTRAIN_COMM_TIMEOUT, else 300 s
  std::string name = "world";
  std::shared_ptr<Store> store;  // null: createJobStore(timeout)
  // Where this instance stands (rank, size, launcher, job id); unset: readLaunchEnvironment(). The
  // job object passes the environment it read once, so the world agrees with it.
  std::optional<LaunchEnvironment> launch;
};

// The rendezvous store of this job: a FileStore in XTRAIN_RENDEZVOUS_DIR (set by xrun), else, for
// processes started by mpirun or srun, a store over MPI, else (a single process) an in-memory
// store. Throws xtrain::error when several processes have no way to meet.
std::shared_ptr<Store> createJobStore(std::optional<Milliseconds> timeout = std::nullopt);

// This instance's rank in the world (its instance index), over options.store or createJobStore().
// Called by every instance of the job; waits (bounded) until all arrived. Programs meet the job
// through comm::Job (comm/job.hpp), which calls this once.
std::shared_ptr<Communicator> createWorldCommunicator(const WorldOptions& options = {});

}  // namespace xtrain::comm

#pragma GCC visibility pop
