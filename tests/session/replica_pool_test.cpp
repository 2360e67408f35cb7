// ReplicaPool driven directly: the run(fn) contract of src/session/replica_pool.hpp (fn(r) once per
// replica, each on replica r's own thread, all at once; the lowest throwing replica's exception
// rethrown after all finished; reusable; the destructor joins). Every wait is bounded, so a broken
// pool fails the test instead of hanging it, and nothing sleeps to synchronise.
#include "session/replica_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/kernels/kernel_threads.hpp"

namespace xtrain::session {
namespace {

// Generous: the machine may be busy; only a broken pool waits this long.
constexpr std::chrono::seconds kTimeout{60};

// Aborts the test binary with a message when it is still alive after the timeout: bounds the calls
// to ReplicaPool::run and the destructor (which themselves wait without a limit), so a pool that
// never returns fails instead of hanging the suite.
class Watchdog {
 public:
  explicit Watchdog(std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this] {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, 2 * kTimeout, [this] { return done_; })) {
        std::cerr << "ReplicaPool test '" << what_ << "' did not finish in "
                  << (2 * kTimeout).count() << " s\n";
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A barrier of n threads whose wait gives up after kTimeout: arrive() returns whether all n
// arrived.
class TimedBarrier {
 public:
  explicit TimedBarrier(int64_t n) : n_(n) {}
  bool arrive() {
    std::unique_lock lock(mu_);
    if (++arrived_ == n_) cv_.notify_all();
    return cv_.wait_for(lock, kTimeout, [this] { return arrived_ >= n_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t n_;
  int64_t arrived_ = 0;
};

// The threads of this process (Linux: the entries of /proc/self/task).
int64_t threadCount() {
  int64_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Whether the process is back to at most `limit` threads within kTimeout. A joined thread can stay
// listed for a moment after join returns (the kernel removes its task after clearing the id join
// waits on), and a thread of an earlier test may still be leaving when `limit` is counted, hence
// the polling and the "at most".
bool threadsDropTo(int64_t limit) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (threadCount() > limit) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(ReplicaPool, RunsFnOncePerReplicaOnDistinctThreads) {
  for (int64_t L : {1, 2, 3, 5}) {
    SCOPED_TRACE("L = " + std::to_string(L));
    Watchdog watchdog("distinct threads");
    ReplicaPool pool(L);
    std::mutex mu;
    std::vector<int> calls(static_cast<size_t>(L), 0);
    std::vector<std::thread::id> ids(static_cast<size_t>(L));
    pool.run([&](int64_t r) {
      std::lock_guard lock(mu);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, L);
      ++calls[static_cast<size_t>(r)];
      ids[static_cast<size_t>(r)] = std::this_thread::get_id();
    });
    EXPECT_EQ(calls, std::vector<int>(static_cast<size_t>(L), 1));
    const std::set<std::thread::id> distinct(ids.begin(), ids.end());
    EXPECT_EQ(distinct.size(), static_cast<size_t>(L));
    EXPECT_EQ(distinct.count(std::this_thread::get_id()), 0u) << "fn ran on the caller's thread";

    // Replica r keeps its thread from one run to the next.
    std::vector<std::thread::id> again(static_cast<size_t>(L));
    pool.run([&](int64_t r) { again[static_cast<size_t>(r)] = std::this_thread::get_id(); });
    EXPECT_EQ(again, ids);
  }
}

TEST(ReplicaPool, AllReplicasRunConcurrently) {
  // fn of every replica waits for all the others inside fn: it completes only if the L calls are
  // in progress at the same time.
  for (int64_t L : {2, 3, 8}) {
    SCOPED_TRACE("L = " + std::to_string(L));
    Watchdog watchdog("concurrency");
    ReplicaPool pool(L);
    TimedBarrier barrier(L);
    std::atomic<int64_t> met{0};
    pool.run([&](int64_t) {
      if (barrier.arrive()) ++met;
    });
    EXPECT_EQ(met.load(), L) << "the replicas did not all run at once";
  }
}

TEST(ReplicaPool, RunReturnsOnlyWhenEveryReplicaReturned) {
  const int64_t L = 4;
  Watchdog watchdog("run waits");
  ReplicaPool pool(L);
  // Replica 0 finishes last: it waits until the others have finished their work.
  std::mutex mu;
  std::condition_variable cv;
  int64_t finished = 0;
  bool lastDone = false;
  pool.run([&](int64_t r) {
    std::unique_lock lock(mu);
    if (r != 0) {
      ++finished;
      cv.notify_all();
      return;
    }
    ASSERT_TRUE(cv.wait_for(lock, kTimeout, [&] { return finished == L - 1; }));
    lastDone = true;
  });
  std::lock_guard lock(mu);
  EXPECT_TRUE(lastDone);
  EXPECT_EQ(finished, L - 1);
}

TEST(ReplicaPool, KernelThreadsShareTheCores) {
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  for (int64_t L : {1, 2, 3}) {
    Watchdog watchdog("kernel threads");
    ReplicaPool pool(L);
    std::vector<int> threads(static_cast<size_t>(L));
    pool.run(
        [&](int64_t r) { threads[static_cast<size_t>(r)] = device::kernelThreadsForThisThread(); });
    const int expected = static_cast<int>(std::max<int64_t>(1, cores / L));
    EXPECT_EQ(threads, std::vector<int>(static_cast<size_t>(L), expected)) << "L = " << L;
  }
}

TEST(ReplicaPool, RethrowsAReplicasExceptionAfterAllFinished) {
  // Replica 1 throws at once; the others finish only after it threw, so a pool that rethrew
  // before every replica returned would see them unfinished.
  const int64_t L = 3;
  Watchdog watchdog("one throws");
  ReplicaPool pool(L);
  std::mutex mu;
  std::condition_variable cv;
  bool threw = false;
  std::atomic<int64_t> finished{0};
  try {
    pool.run([&](int64_t r) {
      std::unique_lock lock(mu);
      if (r == 1) {
        threw = true;
        cv.notify_all();
        throw std::runtime_error("replica 1 failed");
      }
      if (!cv.wait_for(lock, kTimeout, [&] { return threw; })) {
        throw std::runtime_error("timed out waiting for replica 1");
      }
      ++finished;
    });
    FAIL() << "expected replica 1's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "replica 1 failed");
  }
  EXPECT_EQ(finished.load(), L - 1);
}

TEST(ReplicaPool, RethrowsTheLowestThrowingReplicasException) {
  // Replicas 1 and 3 of 4 throw; replica 3 throws first (replica 1 waits for it), and replica 1's
  // exception is the one rethrown.
  const int64_t L = 4;
  Watchdog watchdog("several throw");
  ReplicaPool pool(L);
  std::mutex mu;
  std::condition_variable cv;
  bool threeThrew = false;
  std::atomic<int64_t> finished{0};
  try {
    pool.run([&](int64_t r) {
      ++finished;
      if (r == 3) {
        {
          std::lock_guard lock(mu);
          threeThrew = true;
        }
        cv.notify_all();
        throw std::out_of_range("replica 3");
      }
      if (r == 1) {
        std::unique_lock lock(mu);
        if (!cv.wait_for(lock, kTimeout, [&] { return threeThrew; })) {
          throw std::runtime_error("timed out waiting for replica 3");
        }
        throw std::invalid_argument("replica 1");
      }
    });
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "replica 1");
  } catch (const std::exception& e) {
    FAIL() << "rethrew '" << e.what() << "' instead of replica 1's exception";
  }
  EXPECT_EQ(finished.load(), L);
  EXPECT_TRUE(threeThrew);
}

TEST(ReplicaPool, ReusableAfterAnException) {
  const int64_t L = 3;
  Watchdog watchdog("reuse after exception");
  ReplicaPool pool(L);
  EXPECT_THROW(pool.run([](int64_t r) {
    if (r == 2) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  // The next run is clean: no stale exception, every replica runs again, all at once.
  TimedBarrier barrier(L);
  std::atomic<int64_t> met{0};
  EXPECT_NO_THROW(pool.run([&](int64_t) {
    if (barrier.arrive()) ++met;
  }));
  EXPECT_EQ(met.load(), L);
  EXPECT_NO_THROW(pool.run([](int64_t) {}));
  // A different replica failing in a later run is reported as such.
  try {
    pool.run([](int64_t r) {
      if (r == 0) throw std::runtime_error("replica 0 now");
    });
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "replica 0 now");
  }
}

TEST(ReplicaPool, ManyRunsEachSeeEveryReplicaOnce) {
  const int64_t L = 3;
  const int runs = 500;
  Watchdog watchdog("many runs");
  ReplicaPool pool(L);
  std::vector<std::atomic<int64_t>> calls(static_cast<size_t>(L));
  for (int i = 0; i < runs; ++i) {
    std::vector<int64_t> seen(static_cast<size_t>(L), 0);
    pool.run([&](int64_t r) {
      ++seen[static_cast<size_t>(r)];
      ++calls[static_cast<size_t>(r)];
    });
    // run() returned: every replica's call of this run is visible here.
    ASSERT_EQ(seen, std::vector<int64_t>(static_cast<size_t>(L), 1)) << "run " << i;
  }
  for (const auto& c : calls) EXPECT_EQ(c.load(), runs);
}

TEST(ReplicaPool, DestructorJoinsItsThreads) {
  const int64_t before = threadCount();
  {
    // Destroyed right after construction: the threads may not even have started waiting.
    Watchdog watchdog("destroy unused");
    for (int i = 0; i < 50; ++i) {
      ReplicaPool pool(4);
    }
  }
  EXPECT_TRUE(threadsDropTo(before)) << threadCount() << " threads, " << before << " before";
  {
    Watchdog watchdog("destroy after runs");
    ReplicaPool pool(3);
    pool.run([](int64_t) {});
    EXPECT_THROW(pool.run([](int64_t) { throw std::runtime_error("x"); }), std::runtime_error);
  }
  EXPECT_TRUE(threadsDropTo(before)) << threadCount() << " threads, " << before << " before";
}

}  // namespace
}  // namespace xtrain::session
