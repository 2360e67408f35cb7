#include "replication_testing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "comm/backend.hpp"
#include "comm/store.hpp"

namespace xtrain::replication::testing {

HostTensor& FakeReplicas::buffer(int64_t localReplica, const TensorId& id) {
  return tensors.at(static_cast<size_t>(localReplica)).at(id);
}

void FakeReplicas::forEach(const std::function<void(int64_t)>& fn) {
  const auto L = static_cast<int64_t>(tensors.size());
  if (!threaded_) {
    for (int64_t r = 0; r < L; ++r) fn(r);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(L));
  for (int64_t r = 0; r < L; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

HostTensor replicaValues(int64_t replica, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(1000 * replica + i);
  return HostTensor::fromVector<float>({n}, v);
}

std::vector<std::map<TensorId, HostTensor>> runJob(
    const Job& job, const std::function<void(int64_t, std::map<TensorId, HostTensor>&)>& fill,
    const GradientPlan& plan, const std::function<void(ReplicaExchange&)>& body) {
  const int64_t global = job.instances * job.local;
  std::vector<std::map<TensorId, HostTensor>> out(static_cast<size_t>(global));
  auto store = std::make_shared<comm::InMemoryStore>("replication-test", std::chrono::seconds(30));
  std::vector<std::string> errors(static_cast<size_t>(job.instances));
  std::vector<std::thread> threads;
  for (int i = 0; i < job.instances; ++i) {
    threads.emplace_back([&, i] {
      try {
        const ReplicaLayout layout{job.local, global, i * job.local};
        std::shared_ptr<comm::Communicator> comm;
        if (job.instances > 1) {
          comm = comm::createCommunicator(
              comm::CommConfig{store, i, job.instances, "instances", std::chrono::seconds(30)},
              job.backend);
        }
        FakeReplicas replicas(job.local, job.threaded);
        for (int64_t r = 0; r < job.local; ++r) {
          fill(layout.globalIndex(r), replicas.tensors[static_cast<size_t>(r)]);
        }
        ReplicaExchange exchange(layout, comm, replicas, plan, job.bucketBytes);
        body(exchange);
        for (int64_t r = 0; r < job.local; ++r) {
          out[static_cast<size_t>(layout.globalIndex(r))] =
              std::move(replicas.tensors[static_cast<size_t>(r)]);
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(i)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < job.instances; ++i) {
    EXPECT_EQ(errors[static_cast<size_t>(i)], "") << "instance " << i;
  }
  return out;
}

}  // namespace xtrain::replication::testing
