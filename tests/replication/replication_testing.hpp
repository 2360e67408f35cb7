// Helpers for the replication tests: a job of I instances (threads, one inproc communicator rank
// each) of L local replicas with fake buffers, and values that sum exactly in FLOAT.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "replication/replica_exchange.hpp"

namespace xtrain::replication::testing {

// One instance's local replicas: a map of tensors per replica; forEach runs on threads when asked,
// so the exchange's slicing across the replicas' threads is exercised.
class FakeReplicas final : public LocalReplicas {
 public:
  FakeReplicas(int64_t local, bool threaded)
      : tensors(static_cast<size_t>(local)), threaded_(threaded) {}
  HostTensor& buffer(int64_t localReplica, const TensorId& id) override;
  void forEach(const std::function<void(int64_t)>& fn) override;

  std::vector<std::map<TensorId, HostTensor>> tensors;

 private:
  bool threaded_;
};

// A FLOAT tensor of n elements, element i = 1000 * replica + i: small integers, so sums and the
// means of 1, 2, 4 or 8 replicas are exact.
HostTensor replicaValues(int64_t replica, int64_t n);

struct Job {
  int instances = 1;
  int64_t local = 1;
  bool threaded = false;
  size_t bucketBytes = size_t{1} << 20;
  std::string backend = "inproc";  // of the instances' communicator
};

// Runs the job: on each instance's thread, fill(global replica, its tensors) for each local
// replica, an exchange over the instance's communicator (none with one instance) with plan(), then
// body(exchange). Returns every global replica's tensors afterwards. A failure on any instance
// fails the test (reported with the instance).
std::vector<std::map<TensorId, HostTensor>> runJob(
    const Job& job, const std::function<void(int64_t, std::map<TensorId, HostTensor>&)>& fill,
    const GradientPlan& plan, const std::function<void(ReplicaExchange&)>& body);

}  // namespace xtrain::replication::testing
