// Internal to src/comm/backends/gloo/: how the creation of a group (group.cpp) and the transport
// of a created group (communicator.cpp) meet.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/device.h>
#pragma GCC visibility push(default)

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/store.hpp"

namespace xtrain::comm::gloo {

// What is left of a wait that must end at `deadline` (at least 1 ms: gloo treats 0 as no bound).
inline Milliseconds remainingUntil(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::ceil<Milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, Milliseconds(1));
}

// This rank's communicator of a group whose peers are connected (`context`; null for size 1); its
// keys live under `prefix` in `baseStore` (`store` is that view).
std::shared_ptr<Communicator> makeCommunicator(std::shared_ptr<comm::Store> baseStore,
                                               std::string prefix,
                                               std::shared_ptr<comm::Store> store, std::string name,
                                               int rank, int size, Milliseconds timeout,
                                               std::shared_ptr<::gloo::transport::Device> device,
                                               std::shared_ptr<::gloo::Context> context);

// Creates one rank's communicator of a group whose keys live under `prefix` in `baseStore`: meets
// the other ranks, creates the TCP device (`device` is the parent's for a split, null for a new
// world) and connects the full mesh. `what` names the creation in messages.
std::shared_ptr<Communicator> createGroup(const std::shared_ptr<comm::Store>& baseStore,
                                          const std::string& prefix, const std::string& name,
                                          int rank, int size, Milliseconds timeout,
                                          std::shared_ptr<::gloo::transport::Device> device,
                                          const std::string& what);

}  // namespace xtrain::comm::gloo

#pragma GCC visibility pop
