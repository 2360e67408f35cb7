// SerialExecutor and CompletionWork on their own: order, failures, inline runs, timeouts, shutdown.
#include "comm/serial_executor.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/types.hpp"
#include "testing/error_testing.hpp"

namespace xtrain::comm {
namespace {

using namespace std::chrono_literals;

TEST(SerialExecutor, RunsJobsOneAtATimeInSubmissionOrderOffTheCallersThread) {
  SerialExecutor ex;
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> onCaller{false};
  const auto caller = std::this_thread::get_id();
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < 20; ++i) {
    works.push_back(ex.submit("job " + std::to_string(i), [&, i] {
      if (running.fetch_add(1) != 0) overlapped = true;
      if (std::this_thread::get_id() == caller) onCaller = true;
      std::this_thread::sleep_for(1ms);
      {
        std::lock_guard lock(mu);
        order.push_back(i);
      }
      running.fetch_sub(1);
    }));
  }
  for (auto& w : works) {
    w->wait(10s);
    EXPECT_TRUE(w->isCompleted());
    EXPECT_TRUE(w->isSuccess());
  }
  std::vector<int> expected(20);
  for (int i = 0; i < 20; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(order, expected);
  EXPECT_FALSE(overlapped);
  EXPECT_FALSE(onCaller);
}

TEST(SerialExecutor, AFailingJobFailsItsWorkOnlyAndEveryWaitRethrows) {
  SerialExecutor ex;
  auto bad = ex.submit("bad", [] { throw runtime_error("the wire broke"); });
  std::atomic<bool> ran{false};
  auto good = ex.submit("good", [&] { ran = true; });
  good->wait(10s);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(good->isSuccess());
  EXPECT_TRUE(bad->isCompleted());
  EXPECT_FALSE(bad->isSuccess());
  for (int i = 0; i < 2; ++i) {  // the failure is rethrown by every wait
    EXPECT_CONTAINS(xtrain::testing::errorOf([&] { bad->wait(10s); }), "the wire broke");
  }
}

TEST(SerialExecutor, InlineWhenIdleRunsOnTheCallersThread) {
  SerialExecutor ex;
  std::thread::id ranOn;
  auto w = ex.submit(
      "inline", [&] { ranOn = std::this_thread::get_id(); }, true);
  // Run inline: complete on return, no wait needed.
  EXPECT_TRUE(w->isCompleted());
  EXPECT_TRUE(w->isSuccess());
  EXPECT_EQ(ranOn, std::this_thread::get_id());

  auto failed = ex.submit(
      "inline failure", [] { throw runtime_error("inline boom"); }, true);
  EXPECT_TRUE(failed->isCompleted());
  EXPECT_FALSE(failed->isSuccess());
  EXPECT_CONTAINS(xtrain::testing::errorOf([&] { failed->wait(); }), "inline boom");
}

TEST(SerialExecutor, InlineWhenBusyQueuesBehindTheRunningJob) {
  SerialExecutor ex;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  std::mutex mu;
  std::vector<std::string> order;
  auto blocker = ex.submit("blocker", [&] {
    started.set_value();
    released.wait();
    std::lock_guard lock(mu);
    order.push_back("blocker");
  });
  started.get_future().wait();
  std::thread::id ranOn;
  // Busy: submit() must not block on the running job, and the job must not run inline.
  auto queued = ex.submit(
      "queued",
      [&] {
        ranOn = std::this_thread::get_id();
        std::lock_guard lock(mu);
        order.push_back("queued");
      },
      true);
  EXPECT_FALSE(queued->isCompleted());
  release.set_value();
  queued->wait(10s);
  blocker->wait(10s);
  EXPECT_NE(ranOn, std::this_thread::get_id());
  EXPECT_EQ(order, (std::vector<std::string>{"blocker", "queued"}));
}

TEST(SerialExecutor, WaitWithATimeoutNamesTheCollectiveAndTheJobGoesOn) {
  SerialExecutor ex;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto w = ex.submit("allreduce #7", [&] { released.wait(); });
  try {
    w->wait(20ms);
    ADD_FAILURE() << "expected a timeout";
  } catch (const CommTimeoutError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "allreduce #7");
    EXPECT_CONTAINS(std::string(e.what()), "20 ms");
  }
  EXPECT_FALSE(w->isCompleted());
  release.set_value();
  w->wait(10s);  // the timed-out wait did not cancel it
  EXPECT_TRUE(w->isSuccess());
}

TEST(SerialExecutor, DestructorRunsEveryJobAlreadySubmitted) {
  std::atomic<int> ran{0};
  std::vector<std::shared_ptr<Work>> works;
  {
    SerialExecutor ex;
    for (int i = 0; i < 10; ++i) {
      works.push_back(ex.submit("job", [&] {
        std::this_thread::sleep_for(2ms);
        ran.fetch_add(1);
      }));
    }
  }
  EXPECT_EQ(ran.load(), 10);
  for (auto& w : works) EXPECT_TRUE(w->isSuccess());
}

TEST(CompletionWork, FinishesOnceAndWakesEveryWaiter) {
  CompletionWork w("broadcast");
  EXPECT_FALSE(w.isCompleted());
  EXPECT_FALSE(w.isSuccess());
  std::vector<std::thread> waiters;
  std::atomic<int> woken{0};
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      w.wait(10s);
      woken.fetch_add(1);
    });
  }
  w.finish(nullptr);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(woken.load(), 4);
  EXPECT_TRUE(w.isCompleted());
  EXPECT_TRUE(w.isSuccess());
}

}  // namespace
}  // namespace xtrain::comm
