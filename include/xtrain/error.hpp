// Errors thrown by xtrain, with PopART's names.
//
// Two channels (docs/errors.md):
//  - internal_error: a broken invariant inside xtrain (a bug); thrown by the XT_CHECK macros with
//    file and line.
//  - error and its runtime_error family: bad input or a runtime fault the caller can act on. Every
//    message names the tensor, op, file or option at fault and what was expected.
#pragma once

#include <stdexcept>
#include <string>

#include "xtrain/api.hpp"
#include "xtrain/format.hpp"

namespace xtrain {

// Base of every exception xtrain throws. Formatting constructor: error("tensor {} has shape {}",
// id, shape).
class XTRAIN_API error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
  template <typename... Args>
  explicit error(std::string_view f, const Args&... args)
      : std::runtime_error(xtrain::format(f, args...)) {}
};

// A broken invariant inside xtrain: please report it.
class XTRAIN_API internal_error : public error {
 public:
  using error::error;
};

// A fault while running, as opposed to bad input found while building. Thrown as such (PopART's
// popart_runtime_error, an application error) where the fault is the program's or its
// environment's and a retry fails the same way unless something changes: a device whose IPUs
// another process holds, a kernel meeting an out-of-range index in its data, ranks issuing
// different collectives. The three classes below are the system errors (docs/errors.md).
class XTRAIN_API runtime_error : public error {
 public:
  using error::error;
};

// What must happen before a recoverable_runtime_error's operation can be retried. On xtrain's
// simulated IPUs: IPU_RESET detach and attach the device again (a new session); LINK_RESET make
// the communicator again; PARTITION_RESET restart every instance of the job (xrun
// --max-restarts, resuming from the last checkpoint); POWER_CYCLE restart the host.
enum class RecoveryAction { IPU_RESET, LINK_RESET, PARTITION_RESET, POWER_CYCLE };
inline const char* toString(RecoveryAction action);

// A system fault that getRecoveryAction() clears: e.g. a peer process of the job died
// (comm::CommPeerLostError, PARTITION_RESET). The message ends with "(recovery action: <ACTION>)".
class XTRAIN_API recoverable_runtime_error : public runtime_error {
 public:
  recoverable_runtime_error(RecoveryAction action, const std::string& what)
      : runtime_error(what + " (recovery action: " + toString(action) + ")"), action_(action) {}
  template <typename... Args>
  recoverable_runtime_error(RecoveryAction action, std::string_view f, const Args&... args)
      : recoverable_runtime_error(action, xtrain::format(f, args...)) {}
  // PopART's name (poplar::recoverable_runtime_error::getRecoveryAction).
  RecoveryAction getRecoveryAction() const { return action_; }

 private:
  RecoveryAction action_;
};

// A system fault after which the object that failed cannot be used again, whatever is done to it:
// e.g. a communicator used after an earlier failure (comm::CommAbortedError). The job cannot go on
// in this process: restart it from a checkpoint; if the first failure keeps coming back, report
// it.
class XTRAIN_API unrecoverable_runtime_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

// A system fault that may or may not be recoverable: xtrain cannot tell (a collective timed out:
// a slow peer, a hung one or a dead host look alike). Try the recovery actions in turn.
class XTRAIN_API unknown_runtime_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

// A size, count or byte length computed from input (a model's dimensions, a command-line value, a
// file's header) does not fit in 64 bits. The message names the quantity and every factor of the
// product.
class XTRAIN_API size_overflow_error : public error {
 public:
  using error::error;
};

// A simulated IPU does not have the memory its tensors need. getSummaryReport() is the per-IPU
// memory report.
class XTRAIN_API OutOfMemoryException : public error {
 public:
  OutOfMemoryException(const std::string& what, std::string summaryReport)
      : error(what), report_(std::move(summaryReport)) {}
  const std::string& getSummaryReport() const { return report_; }

 private:
  std::string report_;
};

inline const char* toString(RecoveryAction action) {
  switch (action) {
    case RecoveryAction::IPU_RESET: return "IPU_RESET";
    case RecoveryAction::LINK_RESET: return "LINK_RESET";
    case RecoveryAction::PARTITION_RESET: return "PARTITION_RESET";
    case RecoveryAction::POWER_CYCLE: return "POWER_CYCLE";
  }
  return "UNKNOWN";
}

}  // namespace xtrain
