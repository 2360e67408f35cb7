// The gloo backend: ranks are processes on any hosts, connected by gloo's TCP transport. The only
// code of xtrain that includes gloo's headers lives in this folder.
#pragma once

#include <memory>

#include "comm/backend.hpp"

namespace xtrain::comm::gloo {

std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

}  // namespace xtrain::comm::gloo
