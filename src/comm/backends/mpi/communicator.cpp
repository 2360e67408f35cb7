// Placeholder while the backend is being written: refuses to run, saying so.
#include "comm/backends/mpi/mpi.hpp"

namespace xtrain::comm::mpi {

std::shared_ptr<Communicator> createCommunicator(const CommConfig&) {
  throw error("comm backend 'mpi' is not implemented yet");
}

}  // namespace xtrain::comm::mpi
