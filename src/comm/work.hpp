// Work: the handle of an asynchronous collective.
#pragma once
#pragma GCC visibility push(default)

#include <optional>

#include "comm/types.hpp"

namespace xtrain::comm {

// Contract:
//  - Returned by every collective of a Communicator. The collective runs in the background; its
//    buffers must stay alive and untouched (inputs unwritten, outputs unread) until isCompleted()
//    is true or wait() returned normally.
//  - wait(timeout) blocks until the collective finished. It rethrows the collective's failure
//    (CommTimeoutError, CommMismatchError, CommAbortedError, ...) every time it is called, and
//    throws CommTimeoutError if `timeout` passes first; the collective then keeps running, bounded
//    by its own timeout. Without a timeout, wait() waits for the collective, which its own timeout
//    bounds.
//  - Thread-safe: any thread may wait on or poll a Work, several at once.
//  - Dropping a Work does not cancel the collective.
class Work {
 public:
  virtual ~Work() = default;
  // True once the collective finished, successfully or not. Never blocks.
  virtual bool isCompleted() const = 0;
  // True once the collective finished successfully.
  virtual bool isSuccess() const = 0;
  virtual void wait(std::optional<Milliseconds> timeout = std::nullopt) = 0;
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
