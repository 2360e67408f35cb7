// ReplicaPool: one thread per local replica, so the L replicas of an instance compute at once (each
// on its own simulated IPU), as PopART's replicas do on their own IPUs.
#pragma once
#pragma GCC visibility push(default)

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace xtrain::session {

// Kernel threads for each of `replicasOnHost` replicas computing at once on this host (this
// instance's and those of the job's other instances there): the CPUs the process may use
// (usableCpus: affinity mask, cgroup quota) shared out, at least
// one, so that replicas and instances do not start more threads than there are cores.
int kernelThreadsPerReplica(int64_t replicasOnHost);

// Contract: run(fn) calls fn(r) for every replica r in [0, L), each on replica r's thread, and
// returns when all returned; if any threw, it rethrows the exception of the lowest replica that
// threw (after all finished). start(fn) and wait() are run's two halves, so that the caller can
// work beside the threads: fn must live until wait() returns, and every start() needs its wait()
// before the next start() or the destructor. Each thread's kernels may use
// kernelThreadsPerReplica(L x instancesOnHost) threads. Not re-entrant: one run at a time. The
// destructor joins the threads.
class ReplicaPool {
 public:
  explicit ReplicaPool(int64_t replicas, int64_t instancesOnHost = 1);
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  void run(const std::function<void(int64_t)>& fn);
  void start(const std::function<void(int64_t)>& fn);
  void wait();

 private:
  void loop(int64_t replica, int kernelThreads);

  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int64_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace xtrain::session

#pragma GCC visibility pop
