#include "session/replica_pool.hpp"

#include <algorithm>

#include "common/usable_cpus.hpp"
#include "device/kernels/kernel_threads.hpp"

namespace xtrain::session {

int kernelThreadsPerReplica(int64_t replicasOnHost) {
  const auto cores = static_cast<int64_t>(usableCpus());
  return static_cast<int>(std::max<int64_t>(1, cores / std::max<int64_t>(1, replicasOnHost)));
}

ReplicaPool::ReplicaPool(int64_t replicas, int64_t instancesOnHost)
    : errors_(static_cast<size_t>(replicas)) {
  const int kernelThreads = kernelThreadsPerReplica(replicas * instancesOnHost);
  for (int64_t r = 0; r < replicas; ++r) {
    threads_.emplace_back([this, r, kernelThreads] { loop(r, kernelThreads); });
  }
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ReplicaPool::run(const std::function<void(int64_t)>& fn) {
  start(fn);
  wait();
}

void ReplicaPool::start(const std::function<void(int64_t)>& fn) {
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    running_ = static_cast<int64_t>(threads_.size());
    std::fill(errors_.begin(), errors_.end(), nullptr);
    ++generation_;
  }
  start_.notify_all();
}

void ReplicaPool::wait() {
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
  for (auto& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

void ReplicaPool::loop(int64_t replica, int kernelThreads) {
  device::setKernelThreadsForThisThread(kernelThreads);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t)>* job = nullptr;
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(replica);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mu_);
      errors_[static_cast<size_t>(replica)] = error;
      if (--running_ == 0) done_.notify_all();
    }
  }
}

}  // namespace xtrain::session
