// SerialExecutor: the background thread a backend runs its collectives on, one after another in
// issue order, each completing a Work handle. Shared by the backends so the asynchronous contract
// of work.hpp (wait with timeout, failures rethrown by every wait) is implemented once.
#pragma once
#pragma GCC visibility push(default)

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/work.hpp"

namespace xtrain::comm {

// A Work completed by whoever runs the collective: finish() once, with the failure or nullptr.
class CompletionWork : public Work {
 public:
  // `what` describes the collective in the message of a wait() that times out.
  explicit CompletionWork(std::string what) : what_(std::move(what)) {}

  bool isCompleted() const override;
  bool isSuccess() const override;
  void wait(std::optional<Milliseconds> timeout = std::nullopt) override;
  void finish(std::exception_ptr failure);

 private:
  const std::string what_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr failure_;
};

// Contract: jobs run one at a time in submission order; a job's exception completes its Work with
// that failure (the executor goes on with the next job). submit() never blocks on a running job:
// the job runs on the executor's thread, or, with runInlineIfIdle when nothing is queued or
// running, at once on the caller's thread (a blocking collective then costs no thread hand-off).
// The destructor runs every job already submitted, then joins the thread.
class SerialExecutor {
 public:
  SerialExecutor();
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  std::shared_ptr<Work> submit(std::string what, std::function<void()> job,
                               bool runInlineIfIdle = false);

 private:
  struct Job {
    std::function<void()> run;
    std::shared_ptr<CompletionWork> work;
  };
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  bool busy_ = false;  // a job is running (on the executor's thread or inline)
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
