// The mpi backend: ranks are the processes of an MPI job (mpirun, srun). The only code of xtrain
// that includes mpi.h lives in this folder. See docs/comm-mpi.md.
#pragma once
#pragma GCC visibility push(default)

#include <memory>
#include <optional>
#include <string>

#include "comm/backend.hpp"

namespace xtrain::comm::mpi {

// The world communicator of an MPI job: a duplicate of MPI_COMM_WORLD. Needs the processes started
// by mpirun or srun (launchedByMpi()) and config.rank/size equal to the MPI world rank/size (throws
// xtrain::error otherwise). Initialises MPI on first use (MPI_THREAD_MULTIPLE) unless the
// application did, and then finalises it at exit. Collective over MPI_COMM_WORLD: every process
// calls it, in the same order as its other collective calls on MPI_COMM_WORLD (bounded by the
// timeout). config.store is not used.
std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

// True when an MPI launcher started this process: OMPI_COMM_WORLD_SIZE (Open MPI's mpirun),
// PMIX_RANK (PMIx, e.g. srun --mpi=pmix) or PMI_SIZE (srun with PMI-2) is set.
bool launchedByMpi();

// This process's rank and the world size from the launcher's environment (no MPI call), or
// nullopt when not launched by MPI.
struct LaunchInfo {
  int rank = 0;
  int size = 1;
};
std::optional<LaunchInfo> launchInfo();

// A Store for processes started by mpirun/srun without a shared directory: rank 0 of
// MPI_COMM_WORLD keeps the values and a service thread answers the other ranks' requests over a
// duplicate of MPI_COMM_WORLD. Keys are prefixed with `jobId`; get()/wait() are bounded by
// `timeout` (or their own). Initialises MPI like createCommunicator. The first call in a process is
// collective over MPI_COMM_WORLD (every process calls it, bounded by `timeout`); later calls reuse
// the service. The service runs until MPI_Finalize.
std::shared_ptr<Store> createBootstrapStore(std::string jobId, Milliseconds timeout);

}  // namespace xtrain::comm::mpi

#pragma GCC visibility pop
