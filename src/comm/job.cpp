#include "comm/job.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "comm/agreement.hpp"
#include "comm/communicator.hpp"
#include "comm/host.hpp"
#include "comm/store.hpp"
#include "comm/world.hpp"

namespace xtrain::comm {

Job& Job::current() {
  // A function-local static: built at the first call, destroyed at exit after everything created
  // later (the sessions holding splits); the MPI runtime, when used, is never destroyed.
  static Job job(readLaunchEnvironment());
  return job;
}

Job::Job(LaunchEnvironment launch) : launch_(std::move(launch)) {}

Job::~Job() = default;

std::shared_ptr<Store> Job::store() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!store_) store_ = createJobStore();
  return store_;
}

Communicator* Job::world() {
  if (instances() == 1) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (world_) return world_.get();
  // A failed join is not tried again: the store still holds the keys of the first attempt, under
  // the same group name, which a second one would meet instead of the other instances.
  if (worldFailure_) std::rethrow_exception(worldFailure_);
  try {
    joinWorldLocked();
  } catch (...) {
    worldFailure_ = std::current_exception();
    throw;
  }
  return world_.get();
}

void Job::joinWorldLocked() {
  if (!store_) store_ = createJobStore();
  WorldOptions options;
  options.store = store_;
  options.launch = launch_;
  std::shared_ptr<Communicator> world = createWorldCommunicator(options);
  // Part of joining: the first collective on the world on every instance, whoever asks first.
  // A hash stands for the host's identity: a collision would only merge two hosts' counts (more
  // instances assumed on this host, fewer threads each), never fail.
  auto host = static_cast<int64_t>(std::hash<std::string>{}(hostIdentity()));
  std::vector<int64_t> hosts(static_cast<size_t>(world->size()));
  AllGatherOptions o;
  o.debugName = "instancesOnThisHost";
  world->allGatherSync(BufferView{&host, 1, DataType::INT64},
                       BufferView{hosts.data(), hosts.size(), DataType::INT64}, o);
  instancesOnThisHost_ = static_cast<int>(std::count(hosts.begin(), hosts.end(), host));
  world_ = std::move(world);
}

std::shared_ptr<Communicator> Job::split(const std::string& name) {
  Communicator* w = world();
  if (w == nullptr) return nullptr;
  std::vector<int> everyone(static_cast<size_t>(w->size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  return w->split(everyone, name);
}

namespace {
AgreementOptions named(const std::string& what) {
  AgreementOptions o;
  o.debugName = what;
  return o;
}
}  // namespace

bool Job::allTrue(bool mine, const std::string& what) {
  return comm::allTrue(world(), mine, named(what));
}

bool Job::sameEverywhere(int64_t mine, const std::string& what) {
  return comm::sameEverywhere(world(), mine, named(what));
}

int64_t Job::maxOf(int64_t mine, const std::string& what) {
  return comm::maxOf(world(), mine, named(what));
}

std::vector<std::string> Job::gatherStrings(const std::string& mine, const std::string& what) {
  return comm::gatherStrings(world(), mine, named(what));
}

int Job::instancesOnThisHost() {
  world();
  std::lock_guard<std::mutex> lock(mutex_);
  return instancesOnThisHost_;
}

}  // namespace xtrain::comm
