// Job: the job as this process sees it, one object per process. It owns the launch environment
// (read once), the job's rendezvous store and one world communicator (one rank per instance),
// offers the agreements of comm/agreement.hpp over the world, and hands out named splits of it for
// conversations that need an order of their own (a session's replicas, a background checkpoint).
// Everything in a process that meets the job's other instances goes through here, so instances
// meet in one way (docs/architecture.md, "The job").
//
// Contract:
//  - Job::current() is created at its first call (reading the launch environment; it throws
//    xtrain::error, and is retried at the next call, when that is malformed) and lives until the
//    process exits. Its methods may be called from any thread.
//  - A job of one instance communicates with nobody: world() and split() return null, the
//    agreements return this instance's own value, instancesOnThisHost() is 1.
//  - world() joins the world at its first call in each instance (bounded by the communication
//    timeout, XTRAIN_COMM_TIMEOUT) and, in the same step, learns which instances share this host.
//    A join that failed is not tried again: later calls throw the same error.
//  - The launch environment is read once: a program that changes XTRAIN_* or POPDIST_* variables
//    after its first use of the job (or of xtrain::dist) is not seen to.
//    The world and the agreements over it are collectives: every instance makes the same calls in
//    the same order, from one thread of its choosing (the program's main thread in xtrain's tools).
//    Conversations on other threads take a split.
//  - split(name): a sub-communicator of every instance, named "world/<name>", independent of the
//    world's order. Every instance requests the same names in the same order; a name is requested
//    once per job.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/launch_environment.hpp"

namespace xtrain::comm {

class Communicator;
class Store;

class Job {
 public:
  static Job& current();

  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  ~Job();

  const LaunchEnvironment& launch() const { return launch_; }
  int instance() const { return launch_.instanceIndex; }
  int instances() const { return launch_.numInstances; }

  // The job's rendezvous store (comm/world.hpp createJobStore), created at the first call.
  std::shared_ptr<Store> store();

  // The world communicator (null with one instance).
  Communicator* world();

  // A new sub-communicator of every instance named "world/<name>" (null with one instance).
  std::shared_ptr<Communicator> split(const std::string& name);

  // The agreements of comm/agreement.hpp over world(), their collectives named `what`.
  bool allTrue(bool mine, const std::string& what);
  bool sameEverywhere(int64_t mine, const std::string& what);
  int64_t maxOf(int64_t mine, const std::string& what);
  std::vector<std::string> gatherStrings(const std::string& mine, const std::string& what);

  // How many of the job's instances run on this host, this one included (they share its cores).
  int instancesOnThisHost();

 private:
  explicit Job(LaunchEnvironment launch);
  void joinWorldLocked();  // with mutex_ held

  const LaunchEnvironment launch_;
  std::mutex mutex_;  // guards the lazily created members below
  std::shared_ptr<Store> store_;
  std::shared_ptr<Communicator> world_;
  std::exception_ptr worldFailure_;  // the first join's error
  int instancesOnThisHost_ = 1;
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
