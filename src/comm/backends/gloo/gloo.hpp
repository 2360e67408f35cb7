// The gloo backend: ranks are processes on any hosts (or threads of one process), connected by
// gloo's TCP transport. The only code of xtrain that includes gloo's headers lives in this folder.
// docs/comm-gloo.md describes the protocol, the environment variables and the limits.
#pragma once
#pragma GCC visibility push(default)

#include <memory>

#include "comm/backend.hpp"

namespace xtrain::comm::gloo {

// Every rank announces itself in the store (keys under "gloo/<name>/"), waits (bounded by the
// timeout) for the others, picks the address to bind (XTRAIN_GLOO_IFNAME, XTRAIN_GLOO_HOSTNAME,
// else 127.0.0.1 when every rank is on this host, else the host name) and connects a full mesh of
// TCP pairs through gloo's rendezvous. Throws CommTimeoutError naming the ranks that did not
// arrive, and xtrain::error when the name was used before with this store or the ranks disagree on
// the size.
std::shared_ptr<Communicator> createCommunicator(const CommConfig& config);

}  // namespace xtrain::comm::gloo

#pragma GCC visibility pop
