// GradientReducer over shm with memory the ranks share: every tensor has a home there, buffers at
// home are all-reduced in place, buffers elsewhere are copied in and out, and the sums are those
// of the slot path; XTRAIN_SHARED_GRADIENTS=0 and backends without shared memory keep the old path.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/backend.hpp"
#include "comm/store.hpp"
#include "replication/gradient_reducer.hpp"
#include "testing/process_testing.hpp"

namespace xtrain::replication {
namespace {

// Each rank's tensors: at their homes in shared memory (`atHome`, when there are homes), else in
// vectors of their own.
struct RankTensors {
  std::map<TensorId, std::vector<float>> own;
  std::map<TensorId, float*> at;
  std::vector<float> values(const GradientReducer::Tensor& t) const {
    const float* p = at.at(t.id);
    return {p, p + t.elements};
  }
};

// Rank r's value at i: the float sum depends on the order of the additions.
float valueOf(int r, size_t i) {
  return static_cast<float>(i % 97) * 0.01f + static_cast<float>(r + 1) * 0.1f +
         (r % 2 == 0 ? 3e7f : -3e7f) * static_cast<float>(i % 5 == 0);
}

// Runs `steps` all-reduces (ready() for every other tensor first) on `ranks` threads over one
// world of `backend`; returns each rank's tensors and whether its reducer had shared memory.
std::vector<std::map<TensorId, std::vector<float>>> reduceOnRanks(
    const std::string& backend, int ranks, const std::vector<GradientReducer::Tensor>& tensors,
    bool atHome, int steps, std::vector<int>* shared = nullptr) {
  auto store = std::make_shared<comm::InMemoryStore>("shared-test", std::chrono::seconds(30));
  std::vector<std::map<TensorId, std::vector<float>>> out(static_cast<size_t>(ranks));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  if (shared) shared->assign(static_cast<size_t>(ranks), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = comm::createCommunicator(
            comm::CommConfig{store, r, ranks, "world", std::chrono::seconds(30)}, backend);
        GradientReducer reducer(comm, tensors, 256 * sizeof(float));
        RankTensors mine;
        for (const auto& t : tensors) {
          float* home = reducer.sharedBuffer(t.id);
          if (home != nullptr && shared) (*shared)[static_cast<size_t>(r)] = 1;
          if (home != nullptr) {
            EXPECT_EQ(reinterpret_cast<uintptr_t>(home) % 64, 0u) << t.id;
          }
          mine.own[t.id].resize(t.elements);
          if (!atHome || home == nullptr) home = mine.own[t.id].data();
          mine.at[t.id] = home;
          for (size_t i = 0; i < t.elements; ++i) home[i] = valueOf(r, i);
        }
        const GradientReducer::BufferOf bufferOf = [&](const TensorId& id) {
          return mine.at.at(id);
        };
        for (int s = 0; s < steps; ++s) {
          for (size_t k = 0; k < tensors.size(); k += 2) reducer.ready(tensors[k].id, bufferOf);
          reducer.finish(bufferOf);
        }
        for (const auto& t : tensors) out[static_cast<size_t>(r)][t.id] = mine.values(t);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  return out;
}

// Small tensors packed into buckets of 256 floats, one alone (kAloneBytes), odd sizes.
std::vector<GradientReducer::Tensor> someTensors() {
  return {{"a", 3}, {"b", 100}, {"c", GradientReducer::kAloneBytes / sizeof(float) + 5},
          {"d", 0}, {"e", 77},  {"f", 200},
          {"g", 1}};
}

TEST(GradientReducerShared, HomesInShmAreReducedInPlaceWithTheSlotPathsBits) {
  const auto tensors = someTensors();
  for (int ranks : {2, 3}) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    std::vector<int> shared;
    const auto inPlace = reduceOnRanks("shm", ranks, tensors, true, 2, &shared);
    for (int s : shared) EXPECT_EQ(s, 1);
    std::vector<int> plain;
    std::vector<std::map<TensorId, std::vector<float>>> slots;
    {
      xtrain::testing::ScopedEnv env("XTRAIN_SHARED_GRADIENTS", "0");
      slots = reduceOnRanks("shm", ranks, tensors, true, 2, &plain);
    }
    for (int s : plain) EXPECT_EQ(s, 0) << "XTRAIN_SHARED_GRADIENTS=0: no homes";
    const auto copied = reduceOnRanks("shm", ranks, tensors, false, 2);
    for (size_t r = 0; r < inPlace.size(); ++r) {
      for (const auto& t : tensors) {
        const auto& got = inPlace[r].at(t.id);
        ASSERT_EQ(got.size(), t.elements);
        EXPECT_EQ(std::memcmp(got.data(), slots[r].at(t.id).data(), t.elements * sizeof(float)), 0)
            << t.id << " rank " << r << ": in place differs from the slot path";
        EXPECT_EQ(std::memcmp(copied[r].at(t.id).data(), got.data(), t.elements * sizeof(float)), 0)
            << t.id << " rank " << r << ": copied in and out differs from in place";
        for (size_t i = 0; i < t.elements; ++i) {
          // Two steps: the sum, then twice it (the second step reduces the reduced values).
          float want = valueOf(0, i);
          for (int p = 1; p < ranks; ++p) want = want + valueOf(p, i);
          float twice = want;
          for (int p = 1; p < ranks; ++p) twice = twice + want;
          ASSERT_EQ(got[i], twice) << t.id << "[" << i << "] rank " << r;
        }
      }
    }
  }
}

TEST(GradientReducerShared, BackendsWithoutSharedMemoryGiveNoHomes) {
  std::vector<int> shared;
  const auto out = reduceOnRanks("inproc", 2, someTensors(), true, 1, &shared);
  for (int s : shared) EXPECT_EQ(s, 0);
  for (const auto& t : someTensors()) {
    for (size_t i = 0; i < t.elements; ++i)
      ASSERT_EQ(out[1].at(t.id)[i], valueOf(0, i) + valueOf(1, i)) << t.id;
  }
}

}  // namespace
}  // namespace xtrain::replication
