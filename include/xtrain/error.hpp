// Errors thrown by xtrain, with PopART's names.
//
// Two channels (docs/errors.md):
//  - internal_error: a broken invariant inside xtrain (a bug); thrown by the XT_CHECK macros with
//  file and line.
//  - error and its runtime_error family: bad input or a runtime fault the caller can act on. Every
//  message names
//    the tensor, op, file or option at fault and what was expected.
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

// A fault while running (device, collective, I/O), as opposed to bad input found while building.
class XTRAIN_API runtime_error : public error {
 public:
  using error::error;
};

// What must happen before a recoverable_runtime_error's operation can be retried.
enum class RecoveryAction { IPU_RESET, LINK_RESET, PARTITION_RESET, POWER_CYCLE };
inline const char* toString(RecoveryAction action);

class XTRAIN_API recoverable_runtime_error : public runtime_error {
 public:
  recoverable_runtime_error(RecoveryAction action, const std::string& what)
      : runtime_error(what + " (recovery action: " + toString(action) + ")"), action_(action) {}
  RecoveryAction recoveryAction() const { return action_; }

 private:
  RecoveryAction action_;
};

class XTRAIN_API unrecoverable_runtime_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

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
