#include "comm/backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "comm/backends/gloo/gloo.hpp"
#include "comm/backends/inproc/inproc.hpp"
#include "comm/backends/mpi/mpi.hpp"
#include "comm/backends/shm/shm.hpp"
#include "comm/collective_trace.hpp"
#include "comm/host.hpp"
#include "common/env_value.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, BackendFactory> factories;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->factories["inproc"] = [](const CommConfig& c) { return inproc::createCommunicator(c); };
    reg->factories["shm"] = [](const CommConfig& c) { return shm::createCommunicator(c); };
    reg->factories["gloo"] = [](const CommConfig& c) { return gloo::createCommunicator(c); };
    reg->factories["mpi"] = [](const CommConfig& c) { return mpi::createCommunicator(c); };
    return reg;
  }();
  return *r;
}

// "auto": every rank publishes where it runs; all read the same facts and pick the same backend:
// inproc when the ranks are threads of one process, shm when they share a host, mpi under an MPI
// launcher, else gloo.
std::string chooseBackend(const CommConfig& c) {
  if (c.size == 1) return "inproc";
  const Milliseconds timeout = c.timeout ? *c.timeout : defaultTimeout();
  const std::string prefix = "auto/" + c.name + "/";
  c.store->set(prefix + std::to_string(c.rank), hostIdentity() + "|" + std::to_string(::getpid()));
  std::vector<std::string> keys;
  for (int r = 0; r < c.size; ++r) keys.push_back(prefix + std::to_string(r));
  try {
    c.store->wait(keys, timeout);
  } catch (const CommTimeoutError& e) {
    throw CommTimeoutError("choosing the comm backend of group '{}' (rank {} of {}): {}", c.name,
                           c.rank, c.size, e.what());
  }
  const std::string first = c.store->get(keys[0], timeout);
  const std::string firstHost = first.substr(0, first.rfind('|'));
  bool oneProcess = true;
  bool oneHost = true;
  for (const auto& k : keys) {
    const std::string v = c.store->get(k, timeout);
    oneProcess = oneProcess && v == first;
    oneHost = oneHost && v.substr(0, v.rfind('|')) == firstHost;
  }
  if (oneProcess) return "inproc";
  if (oneHost) return "shm";
  return mpi::launchedByMpi() ? "mpi" : "gloo";
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}
}  // namespace

void registerBackend(const std::string& name, BackendFactory factory) {
  if (name.empty() || name == "auto") throw error("'{}' cannot name a comm backend", name);
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (!r.factories.emplace(name, std::move(factory)).second) {
    throw error("comm backend '{}' is already registered", name);
  }
}

std::vector<std::string> backendNames() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.factories) names.push_back(n);
  return names;
}

std::string resolveBackend(std::string_view requested) {
  std::string name(requested);
  const bool fromEnvironment = name.empty();
  if (fromEnvironment) name = readEnvString("XTRAIN_COMM_BACKEND").value_or("auto");
  if (name == "auto") return name;
  const auto names = backendNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    if (fromEnvironment) {
      throwBadValue("XTRAIN_COMM_BACKEND", name, format("a comm backend: auto, {}", joined(names)));
    }
    throw error("unknown comm backend '{}' (requested); known backends: auto, {}", name,
                joined(names));
  }
  return name;
}

std::shared_ptr<Communicator> createCommunicator(const CommConfig& config,
                                                 std::string_view backend) {
  if (!config.store) throw error("createCommunicator: CommConfig.store is not set");
  if (config.size < 1)
    throw error("createCommunicator: group size {} must be at least 1", config.size);
  if (config.rank < 0 || config.rank >= config.size) {
    throw error("createCommunicator: rank {} is out of range [0, {})", config.rank, config.size);
  }
  if (config.name.empty()) throw error("createCommunicator: CommConfig.name is empty");
  std::string name = resolveBackend(backend);
  if (name == "auto") name = chooseBackend(config);
  BackendFactory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    factory = r.factories.at(name);
  }
  logging::comm::debug("rank {} of {} joins group '{}' with backend {}", config.rank, config.size,
                       config.name, name);
  // The creation is recorded like a collective, so that xrun's hang report sees a member that
  // never arrives at it (docs/launcher-environment.md, "Hang reports").
  CollectiveTrace* trace = CollectiveTrace::process();
  const uint64_t ticket =
      trace != nullptr ? trace->enter(config.name, config.rank, config.size, trace::kCreateOp, 0, 0)
                       : 0;
  auto ended = [&](trace::State state, trace::Failure how) {
    if (trace != nullptr) trace->end(ticket, state, how);
  };
  try {
    auto communicator = factory(config);
    ended(trace::State::Finished, trace::Failure::None);
    return communicator;
  } catch (const CommTimeoutError&) {
    ended(trace::State::Failed, trace::Failure::Timeout);
    throw;
  } catch (...) {
    ended(trace::State::Failed, trace::Failure::Other);
    throw;
  }
}

}  // namespace xtrain::comm
