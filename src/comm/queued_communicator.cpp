#include "comm/queued_communicator.hpp"

#include <algorithm>

#include "comm/collective_trace.hpp"
#include "common/timeline.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm {

void Transport::validate(const QueuedCommunicator&, const Collective&) const {}

std::shared_ptr<Communicator> Transport::split(QueuedCommunicator& comm, const SplitRequest&) {
  throw UnsupportedError(comm.backendName(), "split");
}

std::shared_ptr<const SharedMemory> Transport::allocateShared(QueuedCommunicator&, size_t) {
  return nullptr;
}

std::string timeoutMessage(const std::string& what, const std::string& group, int size,
                           Milliseconds timeout, const std::vector<int>& missing) {
  return format("{} in group '{}' (size {}) timed out after {} ms: ranks {} did not arrive", what,
                group, size, timeout.count(), missing);
}

QueuedCommunicator::QueuedCommunicator(GroupInfo info, std::unique_ptr<Transport> transport)
    : info_(std::move(info)), transport_(std::move(transport)) {}

QueuedCommunicator::~QueuedCommunicator() = default;

void QueuedCommunicator::abort(const std::string& message) {
  std::lock_guard lock(failMu_);
  if (!failure_) failure_ = message;
}

bool QueuedCommunicator::aborted() const {
  std::lock_guard lock(failMu_);
  return failure_.has_value();
}

void QueuedCommunicator::throwIfAborted() const {
  std::lock_guard lock(failMu_);
  if (failure_) {
    throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name(),
                           *failure_);
  }
}

void QueuedCommunicator::fail(FailureKind kind, const std::string& message) {
  abort(message);
  logging::comm::err("{}", message);
  switch (kind) {
    case FailureKind::Timeout: throw CommTimeoutError(message);
    case FailureKind::Mismatch: throw CommMismatchError(message);
    case FailureKind::PeerLost: throw CommPeerLostError(message);
    case FailureKind::Aborted:
      throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name(),
                             message);
    case FailureKind::Other: break;
  }
  throw runtime_error(message);
}

std::optional<std::string> QueuedCommunicator::disagreement(
    const std::function<const Fingerprint&(int)>& fingerprintOf) const {
  const Fingerprint& first = fingerprintOf(0);
  for (int p = 1; p < size(); ++p) {
    const Fingerprint& other = fingerprintOf(p);
    if (!(other == first)) {
      return format(
          "collective mismatch in group '{}' (size {}): rank 0 called {} but rank {} called {}",
          name(), size(), describe(first), p, describe(other));
    }
  }
  return std::nullopt;
}

std::shared_ptr<Work> QueuedCommunicator::doAllReduce(BufferView in, BufferView out,
                                                      const AllReduceOptions& o) {
  return enqueue({OpKind::AllReduce, 0, in.count, in.type, o.op, 0}, in, out, o.timeout,
                 o.debugName);
}

std::shared_ptr<Work> QueuedCommunicator::doReduceScatter(BufferView in, BufferView out,
                                                          const ReduceScatterOptions& o) {
  return enqueue({OpKind::ReduceScatter, 0, in.count, in.type, o.op, 0}, in, out, o.timeout,
                 o.debugName);
}

std::shared_ptr<Work> QueuedCommunicator::doAllGather(BufferView in, BufferView out,
                                                      const AllGatherOptions& o) {
  return enqueue({OpKind::AllGather, 0, out.count, out.type, CollectiveOperator::Add, 0}, in, out,
                 o.timeout, o.debugName);
}

std::shared_ptr<Work> QueuedCommunicator::doBroadcast(BufferView in, BufferView out,
                                                      const BroadcastOptions& o) {
  return enqueue({OpKind::Broadcast, 0, out.count, out.type, CollectiveOperator::Add, o.root}, in,
                 out, o.timeout, o.debugName);
}

std::shared_ptr<Work> QueuedCommunicator::doBarrier(const BarrierOptions& o) {
  return enqueue({OpKind::Barrier, 0, 0, DataType::UNDEFINED, CollectiveOperator::Add, 0}, {}, {},
                 o.timeout, o.debugName);
}

std::shared_ptr<Work> QueuedCommunicator::enqueue(const Fingerprint& f, BufferView in,
                                                  BufferView out,
                                                  std::optional<Milliseconds> timeout,
                                                  const std::string& debugName) {
  Collective c{f, in, out, timeout ? *timeout : info_.timeout, {}, {}, debugName};
  transport_->validate(*this, c);
  std::lock_guard lock(issueMu_);
  c.fingerprint.seq = nextSeq_++;
  c.what = describe(c.fingerprint);
  if (!debugName.empty()) c.what += " '" + debugName + "'";
  logging::comm::trace("group '{}' rank {}: issue {}", name(), rank(), c.what);
  std::string what = c.what;
  return executor_.submit(
      std::move(what), [this, c = std::move(c)]() mutable { run(std::move(c)); },
      info_.runSyncCallsInline && issuedBySyncCall());
}

namespace {

// Records one collective in the process's trace (xrun's hang report) from entry to end.
class TraceScope {
 public:
  TraceScope(const QueuedCommunicator& comm, const Collective& c)
      : trace_(CollectiveTrace::process()) {
    if (trace_ == nullptr) return;
    const Fingerprint& f = c.fingerprint;
    const uint64_t bytes = f.count == 0 ? 0 : f.count * dataTypeSize(f.type);
    ticket_ = trace_->enter(comm.name(), comm.rank(), comm.size(), toString(f.kind), f.seq, bytes,
                            c.debugName);
  }
  ~TraceScope() {
    if (trace_ != nullptr) trace_->end(ticket_, state_, failure_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  void finished() { state_ = trace::State::Finished; }
  void failed(trace::Failure how) { failure_ = how; }

 private:
  CollectiveTrace* trace_;
  uint64_t ticket_ = 0;
  trace::State state_ = trace::State::Failed;
  trace::Failure failure_ = trace::Failure::Other;
};

// "allReduce 'gradient bucket of w'": the collective and what it is for.
std::string timelineName(const Collective& c) {
  std::string name = toString(c.fingerprint.kind);
  if (!c.debugName.empty()) name += " '" + c.debugName + "'";
  return name;
}

}  // namespace

void QueuedCommunicator::run(Collective c) {
  throwIfAborted();
  c.deadline = std::chrono::steady_clock::now() + c.timeout;
  TraceScope traced(*this, c);
  // The job's timeline (docs/trace.md): the executor's thread is a track of its own.
  if (timeline::recording()) timeline::nameThisThreadOnce("collectives: " + name());
  timeline::Span span(timeline::Category::Collective,
                      timeline::recording() ? timelineName(c) : std::string());
  span.arg("bytes",
           c.fingerprint.count == 0
               ? 0
               : static_cast<int64_t>(c.fingerprint.count * dataTypeSize(c.fingerprint.type)))
      .arg("ranks", size())
      .arg("seq", static_cast<int64_t>(c.fingerprint.seq))
      .text("communicator", name());
  try {
    transport_->execute(*this, c);
    traced.finished();
  } catch (const CommAbortedError&) {
    traced.failed(trace::Failure::Aborted);
    throw;  // the group had failed before: that failure is the one to keep
  } catch (const CommTimeoutError& e) {
    traced.failed(trace::Failure::Timeout);
    abort(e.what());
    throw;
  } catch (const CommMismatchError& e) {
    traced.failed(trace::Failure::Mismatch);
    abort(e.what());
    throw;
  } catch (const CommPeerLostError& e) {
    traced.failed(trace::Failure::PeerLost);
    abort(e.what());
    throw;
  } catch (const std::exception& e) {
    // An error part-way (a transport error, a bug): the peers may be inside this collective.
    abort(format("{} in group '{}' failed: {}", c.what, name(), e.what()));
    throw;
  }
}

std::shared_ptr<Communicator> QueuedCommunicator::doSplit(const std::vector<int>& ranks,
                                                          const std::string& splitName) {
  throwIfAborted();
  SplitRequest r;
  r.ranks = ranks;
  r.name = splitName;
  r.childName = name() + "/" + splitName;
  r.newRank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank()) - ranks.begin());
  std::string base = splitName + "|";
  for (int p : ranks) base += std::to_string(p) + ",";
  {
    std::lock_guard lock(issueMu_);
    r.identity = base + "|" + std::to_string(splitCounts_[base]++);
  }
  r.what = format("split of group '{}' into '{}' with parent ranks {}", name(), splitName, ranks);
  return transport_->split(*this, r);
}

std::shared_ptr<const SharedMemory> QueuedCommunicator::doAllocateShared(size_t bytes) {
  throwIfAborted();
  return transport_->allocateShared(*this, bytes);
}

}  // namespace xtrain::comm
