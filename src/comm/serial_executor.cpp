#include "comm/serial_executor.hpp"

namespace xtrain::comm {

bool CompletionWork::isCompleted() const {
  std::lock_guard lock(mu_);
  return done_;
}

bool CompletionWork::isSuccess() const {
  std::lock_guard lock(mu_);
  return done_ && !failure_;
}

void CompletionWork::wait(std::optional<Milliseconds> timeout) {
  std::unique_lock lock(mu_);
  if (timeout) {
    if (!cv_.wait_for(lock, *timeout, [&] { return done_; })) {
      throw CommTimeoutError(
          "waiting for {} timed out after {} ms (the collective keeps running, bounded by its own "
          "timeout)",
          what_, timeout->count());
    }
  } else {
    cv_.wait(lock, [&] { return done_; });
  }
  if (failure_) std::rethrow_exception(failure_);
}

void CompletionWork::finish(std::exception_ptr failure) {
  {
    std::lock_guard lock(mu_);
    done_ = true;
    failure_ = std::move(failure);
  }
  cv_.notify_all();
}

SerialExecutor::SerialExecutor() : thread_([this] { loop(); }) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<Work> SerialExecutor::submit(std::string what, std::function<void()> job,
                                             bool runInlineIfIdle) {
  auto work = std::make_shared<CompletionWork>(std::move(what));
  {
    std::lock_guard lock(mu_);
    if (!runInlineIfIdle || busy_ || !queue_.empty()) {
      queue_.push_back(Job{std::move(job), work});
      cv_.notify_all();
      return work;
    }
    busy_ = true;
  }
  try {
    job();
    work->finish(nullptr);
  } catch (...) {
    work->finish(std::current_exception());
  }
  {
    std::lock_guard lock(mu_);
    busy_ = false;
  }
  cv_.notify_all();
  return work;
}

void SerialExecutor::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !busy_ && (stopping_ || !queue_.empty()); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      job.run();
      job.work->finish(nullptr);
    } catch (...) {
      job.work->finish(std::current_exception());
    }
    {
      std::lock_guard lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace xtrain::comm
