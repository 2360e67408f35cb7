#include "comm/rendezvous.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

#include "common/check.hpp"

namespace xtrain::comm {

ThreadBarrier::ThreadBarrier(int parties)
    : parties_(parties), here_(static_cast<size_t>(std::max(parties, 0)), 0) {
  XT_CHECK(parties >= 1, "a rendezvous of {} parties", parties);
}

void ThreadBarrier::failLocked(RendezvousFailure::Kind kind, std::string message) {
  if (kind_) return;
  kind_ = kind;
  message_ = std::move(message);
  cv_.notify_all();
}

RendezvousFailure ThreadBarrier::failureLocked(bool earlier) const {
  return RendezvousFailure{*kind_, message_, earlier};
}

std::vector<int> ThreadBarrier::missingLocked() const {
  std::vector<int> missing;
  for (int p = 0; p < parties_; ++p) {
    if (!here_[static_cast<size_t>(p)]) missing.push_back(p);
  }
  return missing;
}

std::optional<RendezvousFailure> ThreadBarrier::wait(int party, const RendezvousWait& w,
                                                     const Admit& admit) {
  XT_CHECK(party >= 0 && party < parties_, "party {} of a rendezvous of {}", party, parties_);
  std::unique_lock lock(mu_);
  if (kind_) return failureLocked(true);
  auto& here = here_[static_cast<size_t>(party)];
  if (here) {
    failLocked(RendezvousFailure::Kind::Other, w.twice(party));
    return failureLocked(false);
  }
  if (admit) {
    if (auto refused = admit(arrived_ == 0)) {
      failLocked(RendezvousFailure::Kind::Mismatch, std::move(*refused));
      return failureLocked(false);
    }
  }
  here = 1;
  if (++arrived_ == parties_) {
    if (w.last) {
      // The others wait for the step without their own deadline: it ends in the release or in a
      // failure.
      completing_ = true;
      lock.unlock();
      try {
        w.last();
      } catch (const std::exception& e) {
        lock.lock();
        completing_ = false;
        failLocked(RendezvousFailure::Kind::Other, e.what());
        throw;
      } catch (...) {
        // Not a std::exception: the others must not wait for a step that will never end.
        lock.lock();
        completing_ = false;
        failLocked(RendezvousFailure::Kind::Other,
                   "the last party's step threw a non-standard exception");
        throw;
      }
      lock.lock();
      completing_ = false;
      // Aborted while the step ran: the waiting parties return the failure, and so does this one.
      if (kind_) {
        cv_.notify_all();
        return failureLocked(false);
      }
    }
    arrived_ = 0;
    ++generation_;
    std::fill(here_.begin(), here_.end(), 0);
    cv_.notify_all();
    return std::nullopt;
  }
  const uint64_t generation = generation_;
  const auto deadline = std::chrono::steady_clock::now() + w.timeout;
  while (generation_ == generation && !kind_) {
    if (completing_) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
               generation_ == generation && !kind_ && !completing_) {
      failLocked(RendezvousFailure::Kind::Timeout, w.timedOut(missingLocked()));
      return failureLocked(false);
    }
  }
  // A barrier completed before a failure is a success: every party may go on.
  if (generation_ == generation) return failureLocked(false);
  return std::nullopt;
}

void ThreadBarrier::abort(RendezvousFailure::Kind kind, std::string message) {
  std::lock_guard lock(mu_);
  failLocked(kind, std::move(message));
}

std::optional<RendezvousFailure> ThreadBarrier::failure() const {
  std::lock_guard lock(mu_);
  if (!kind_) return std::nullopt;
  return failureLocked(true);
}

void ThreadBarrier::reset() {
  std::lock_guard lock(mu_);
  kind_.reset();
  message_.clear();
  arrived_ = 0;
  ++generation_;
  completing_ = false;
  std::fill(here_.begin(), here_.end(), 0);
}

}  // namespace xtrain::comm
