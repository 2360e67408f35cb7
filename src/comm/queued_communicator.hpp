// QueuedCommunicator: the communicator core every backend shares. It owns what the Communicator
// contract (communicator.hpp) asks of every backend apart from moving bytes: sequence numbers,
// the serial executor that runs collectives in issue order, the collective's timeout and deadline,
// the fingerprint comparison and its message, the abort that keeps the first failure, and the
// bookkeeping of split(). A backend is a Transport: it runs one collective among the ranks of its
// group (and creates the group of a split).
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/fingerprint.hpp"
#include "comm/serial_executor.hpp"

namespace xtrain::comm {

// One issued collective, as the transport sees it.
struct Collective {
  Fingerprint fingerprint;  // with its sequence number
  BufferView input;         // validated by Communicator (counts, types, overlap)
  BufferView output;
  Milliseconds timeout{0};  // the collective's bound: its options' timeout, else the communicator's
  std::chrono::steady_clock::time_point deadline;  // when it started running, plus `timeout`
  std::string what;       // "allReduce seq 3 (count=10, type=FLOAT, op=Add) 'debugName'"
  std::string debugName;  // the options' debugName ("" when none)
};

// One split(), as the transport sees it (arguments already validated by Communicator::split).
struct SplitRequest {
  std::vector<int> ranks;  // parent ranks of the new group, in the new group's rank order
  std::string name;        // the split's name
  std::string childName;   // "<parent name>/<name>"
  int newRank = 0;         // this rank's rank in the new group
  // "<name>|<r0>,<r1>,...,|<generation>": the same on every member, different for every split()
  // call of this group (the generation counts earlier splits with the same name and ranks).
  std::string identity;
  std::string what;  // "split of group 'world' into 'dp0' with parent ranks [0, 1]"
};

// How a collective failed (the type of the error fail() throws).
enum class FailureKind {
  Timeout,   // CommTimeoutError
  Mismatch,  // CommMismatchError
  PeerLost,  // CommPeerLostError
  Aborted,   // CommAbortedError "group '<name>' cannot be used after an earlier failure: <message>"
  Other,     // xtrain::runtime_error
};

class QueuedCommunicator;

// Contract of a backend (what it implements, what it may assume):
//  - execute() runs one collective among the ranks of the group and returns when this rank's part
//    is done (its outputs written, its inputs no longer needed). It is called on one thread at a
//    time, in sequence order, never after the communicator was aborted, with buffers that
//    Communicator validated and `deadline` set. Every rank calls it with the same sequence of
//    fingerprints unless the application is wrong: the transport must exchange enough to detect
//    a mismatch (QueuedCommunicator::disagreement compares and words it) before it moves data,
//    and must give up at the deadline, naming the ranks that did not arrive (timeoutMessage()).
//  - Failures: report them with comm.fail(kind, message), which records the first failure and
//    throws; a transport whose ranks share failure state (a segment, a store record) also
//    publishes it there, so that peers fail at once rather than at their timeout. An error that
//    escapes otherwise still aborts the communicator (a CommTimeoutError, CommMismatchError or
//    CommPeerLostError with its own message, anything else as "<what> in group '<name>' failed:
//    <error>"), except CommAbortedError, which means the group had failed before.
//  - validate() may reject a collective at issue time (xtrain::error, no sequence number taken),
//    e.g. for a size the transport cannot move.
//  - split() creates this rank's communicator of the new group and returns once every member
//    arrived (bounded by the parent's timeout). The default throws UnsupportedError.
//  - The transport is destroyed after every issued collective finished, on the thread that drops
//    the last reference to the communicator.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void validate(const QueuedCommunicator& comm, const Collective& c) const;
  virtual void execute(QueuedCommunicator& comm, const Collective& c) = 0;
  virtual std::shared_ptr<Communicator> split(QueuedCommunicator& comm, const SplitRequest& r);
  // Communicator::allocateShared (bytes > 0, at least two ranks). The default: null.
  virtual std::shared_ptr<const SharedMemory> allocateShared(QueuedCommunicator& comm,
                                                             size_t bytes);
};

// What a communicator is, besides its transport.
struct GroupInfo {
  std::string backend;  // backendName()
  std::string name;     // the group's name
  int rank = 0;
  int size = 1;
  Milliseconds timeout{0};  // the default bound of a collective (and of split)
  // Run a collective issued by a *Sync helper on the calling thread when nothing is queued
  // (SerialExecutor's runInlineIfIdle): for transports that need no particular thread.
  bool runSyncCallsInline = false;
};

class QueuedCommunicator final : public Communicator {
 public:
  QueuedCommunicator(GroupInfo info, std::unique_ptr<Transport> transport);
  // Waits for the issued collectives (each bounded by its timeout), then destroys the transport.
  ~QueuedCommunicator() override;

  int rank() const override { return info_.rank; }
  int size() const override { return info_.size; }
  const std::string& name() const override { return info_.name; }
  const std::string& backendName() const override { return info_.backend; }
  Milliseconds timeout() const override { return info_.timeout; }

  // The first failure wins; every later collective (and split) fails at once with
  // CommAbortedError carrying it.
  void abort(const std::string& message);
  bool aborted() const;
  void throwIfAborted() const;
  // abort(message), logs it, and throws the error of `kind` (see FailureKind).
  [[noreturn]] void fail(FailureKind kind, const std::string& message);

  // The fingerprint agreement: compares the fingerprints of ranks 1..size()-1 (fingerprintOf(p))
  // with rank 0's; the message of the first that differs, or nothing when they all agree.
  std::optional<std::string> disagreement(
      const std::function<const Fingerprint&(int)>& fingerprintOf) const;

 protected:
  std::shared_ptr<Work> doAllReduce(BufferView input, BufferView output,
                                    const AllReduceOptions& options) override;
  std::shared_ptr<Work> doReduceScatter(BufferView input, BufferView output,
                                        const ReduceScatterOptions& options) override;
  std::shared_ptr<Work> doAllGather(BufferView input, BufferView output,
                                    const AllGatherOptions& options) override;
  std::shared_ptr<Work> doBroadcast(BufferView input, BufferView output,
                                    const BroadcastOptions& options) override;
  std::shared_ptr<Work> doBarrier(const BarrierOptions& options) override;
  std::shared_ptr<Communicator> doSplit(const std::vector<int>& ranks,
                                        const std::string& name) override;
  std::shared_ptr<const SharedMemory> doAllocateShared(size_t bytes) override;

 private:
  std::shared_ptr<Work> enqueue(const Fingerprint& f, BufferView input, BufferView output,
                                std::optional<Milliseconds> timeout, const std::string& debugName);
  void run(Collective c);

  const GroupInfo info_;
  std::unique_ptr<Transport> transport_;

  mutable std::mutex failMu_;  // guards failure_
  std::optional<std::string> failure_;

  std::mutex issueMu_;  // guards nextSeq_ and splitCounts_
  uint64_t nextSeq_ = 0;
  std::map<std::string, int> splitCounts_;

  SerialExecutor executor_;  // last: destroyed (drained) first, while the transport exists
};

// "<what> in group '<group>' (size <size>) timed out after <timeout> ms: ranks [..] did not
// arrive": the message of a collective (or a group's creation or split) that timed out.
std::string timeoutMessage(const std::string& what, const std::string& group, int size,
                           Milliseconds timeout, const std::vector<int>& missing);

}  // namespace xtrain::comm

#pragma GCC visibility pop
