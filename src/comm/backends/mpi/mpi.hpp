// The mpi backend: ranks are the processes of an MPI job (mpirun, srun). The only code of xtrain
// that includes mpi.h lives in this folder.
#pragma once

#include <memory>

#include "comm/backend.hpp"

namespace xtrain::comm::mpi {

std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

}  // namespace xtrain::comm::mpi
