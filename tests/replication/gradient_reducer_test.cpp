// GradientReducer driven directly over inproc communicators: bucketing, sums across ranks, early
// starts, several steps, the bucket size from the environment.
#include "replication/gradient_reducer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/backend.hpp"
#include "comm/store.hpp"
#include "testing/error_testing.hpp"
#include "testing/process_testing.hpp"

namespace xtrain::replication {
namespace {

using Buffers = std::map<TensorId, std::vector<float>>;

// Runs fn(reducer, rank's buffers) on `ranks` threads over one inproc world; returns the buffers.
std::vector<Buffers> onRanks(int ranks, const std::vector<GradientReducer::Tensor>& tensors,
                             size_t bucketBytes,
                             const std::function<void(GradientReducer&, Buffers&)>& fn) {
  auto store = std::make_shared<comm::InMemoryStore>("reducer-test", std::chrono::seconds(30));
  std::vector<Buffers> buffers(static_cast<size_t>(ranks));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = comm::createCommunicator(
            comm::CommConfig{store, r, ranks, "world", std::chrono::seconds(30)}, "inproc");
        Buffers& mine = buffers[static_cast<size_t>(r)];
        for (const auto& t : tensors) {
          auto& b = mine[t.id];
          for (size_t i = 0; i < t.elements; ++i) {
            b.push_back(static_cast<float>(100 * r + static_cast<int>(i)));
          }
        }
        GradientReducer reducer(comm, tensors, bucketBytes);
        fn(reducer, mine);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  return buffers;
}

GradientReducer::BufferOf bufferIn(Buffers& b) {
  return [&b](const TensorId& id) { return b.at(id).data(); };
}

// Element i of tensor t summed over `ranks` ranks of onRanks.
float sumOf(int ranks, size_t i) {
  float s = 0;
  for (int r = 0; r < ranks; ++r) s += static_cast<float>(100 * r + static_cast<int>(i));
  return s;
}

TEST(GradientReducer, PacksSmallTensorsAndReducesLargeOnesAlone) {
  // Buckets of 8 floats: a and b share one, c (100) is alone and closes it, d is empty (no
  // bucket), e starts a new bucket.
  const std::vector<GradientReducer::Tensor> tensors{
      {"a", 3}, {"b", 3}, {"c", 100}, {"d", 0}, {"e", 5}};
  std::atomic<size_t> buckets{0};  // written by every rank
  const auto out = onRanks(3, tensors, 8 * sizeof(float), [&](GradientReducer& r, Buffers& b) {
    buckets = r.numBuckets();
    r.allReduceSum(bufferIn(b));
  });
  EXPECT_EQ(buckets.load(), 3u);
  for (const auto& b : out) {
    for (const auto& t : tensors) {
      ASSERT_EQ(b.at(t.id).size(), t.elements);
      for (size_t i = 0; i < t.elements; ++i) EXPECT_EQ(b.at(t.id)[i], sumOf(3, i)) << t.id;
    }
  }
}

TEST(GradientReducer, LargeTensorsAreReducedAloneAndCloseTheBucketBeforeThem) {
  // Buckets of 8 MiB, but a tensor of kAloneBytes is reduced in place, alone (no copy through the
  // staging buffer), and a and b do not share a bucket across it: a need not wait for b, which
  // the backward pass produces after the large one.
  const size_t large = GradientReducer::kAloneBytes / sizeof(float);
  const std::vector<GradientReducer::Tensor> tensors{{"a", 3}, {"large", large}, {"b", 3}};
  std::atomic<size_t> buckets{0};
  std::atomic<int64_t> steps{0}, early{0};
  const auto out = onRanks(2, tensors, size_t{8} << 20, [&](GradientReducer& r, Buffers& b) {
    buckets = r.numBuckets();
    r.ready("a", bufferIn(b));
    r.ready("large", bufferIn(b));
    r.finish(bufferIn(b));
    steps = r.overlap().steps;
    early = r.overlap().earlyBuckets;
  });
  EXPECT_EQ(buckets.load(), 3u);
  // The overlap report: a's and the large tensor's buckets started before finish(), b's in it.
  EXPECT_EQ(steps.load(), 1);
  EXPECT_EQ(early.load(), 2);
  for (const auto& b : out) {
    for (const auto& t : tensors) {
      for (size_t i = 0; i < t.elements; ++i) {
        ASSERT_EQ(b.at(t.id)[i], sumOf(2, i)) << t.id << "[" << i << "]";
      }
    }
  }
}

TEST(GradientReducer, ReadyTensorsStartTheirBucketsAndEveryStepStartsAfresh) {
  const std::vector<GradientReducer::Tensor> tensors{{"x", 4}, {"y", 4}, {"z", 50}};
  const auto out = onRanks(2, tensors, 8 * sizeof(float), [](GradientReducer& r, Buffers& b) {
    // Step 1: y and x complete their bucket early, z is left to finish().
    r.ready("y", bufferIn(b));
    r.ready("x", bufferIn(b));
    r.ready("unknown", bufferIn(b));  // not reduced by this reducer: ignored
    r.finish(bufferIn(b));
    // Step 2: only z early; x's bucket is incomplete until finish().
    r.ready("z", bufferIn(b));
    r.ready("x", bufferIn(b));
    r.finish(bufferIn(b));
  });
  // Two steps: the sum of the sums, i.e. 2 x the sum.
  for (const auto& b : out) {
    for (const auto& t : tensors) {
      for (size_t i = 0; i < t.elements; ++i) EXPECT_EQ(b.at(t.id)[i], 2 * sumOf(2, i)) << t.id;
    }
  }
}

TEST(GradientReducer, BucketSizeComesFromTheEnvironment) {
  {
    xtrain::testing::ScopedEnv env("XTRAIN_GRAD_BUCKET_BYTES", nullptr);
    EXPECT_EQ(GradientReducer::bucketBytesFromEnvironment(), size_t{4} << 20);
  }
  {
    xtrain::testing::ScopedEnv env("XTRAIN_GRAD_BUCKET_BYTES", "65536");
    EXPECT_EQ(GradientReducer::bucketBytesFromEnvironment(), 65536u);
  }
  for (const char* bad : {"abc", "3", "12kb", "-8"}) {
    xtrain::testing::ScopedEnv env("XTRAIN_GRAD_BUCKET_BYTES", bad);
    xtrain::testing::expectError([] { GradientReducer::bucketBytesFromEnvironment(); },
                                 {"XTRAIN_GRAD_BUCKET_BYTES", bad, "at least 4"});
  }
}

}  // namespace
}  // namespace xtrain::replication
