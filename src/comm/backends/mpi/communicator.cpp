// MpiCommunicator: one rank (process) of an MPI communicator. Each communicator has a worker thread
// that runs its collectives in issue order, so asynchronous collectives overlap with the caller's
// work.
//
// Every collective has two phases:
//   1. arrival: every rank sends its fingerprint to rank 0 of the group (point-to-point, 48 bytes)
//      and waits for rank 0's verdict. Rank 0 compares the fingerprints and answers "go",
//      "mismatch: rank 0 called ... but rank p called ..." or, when some ranks do not arrive in
//      time, "timed out: ranks [..] did not arrive". These are receives, which MPI can cancel, so a
//      timeout here leaves nothing pending. A rank whose wait for rank 0 times out tells rank 0 (a
//      "give-up" message) so that a late rank 0 fails instead of starting the data phase alone.
//   2. data: an MPI non-blocking collective (MPI_Iallreduce, MPI_Ireduce_scatter_block,
//      MPI_Iallgather, MPI_Ibcast) polled with MPI_Test until it completes or the timeout passes.
//      MPI cannot cancel a collective: after a timeout here the request stays pending, the process
//      is marked so that MPI_Finalize is skipped at exit (it could hang), and the launcher ends the
//      job when this process exits.
// Barrier is the arrival phase alone; so is the Local operator (plus a local copy).
//
// Operators map to MPI's built-in ones where they match (sum and product on unsigned types, which
// wrap like the contract says; min and max on the signed ones). LogicalAnd/LogicalOr normalise each
// value to 0/1 locally, then take the min/max. SquareAdd squares locally, then sums. Mean sums, then
// divides (INT32 and UINT8 sum in INT64 so the mean is exact). FLOAT16 sums and products widen to
// FLOAT (reduced in float, like the reference); its min/max use user-defined MPI_Ops, and so do
// UINT8 sums and products (Open MPI 4.1's AVX kernels saturate 8-bit sums instead of wrapping).
#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <functional>
#include <type_traits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "comm/serial_executor.hpp"
#include "comm/backends/mpi/mpi.hpp"
#include "comm/backends/mpi/runtime.hpp"
#include "comm/fingerprint.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::mpi {

namespace {

const std::string kBackendName = "mpi";
using Op = CollectiveOperator;

// Point-to-point tags on a communicator's own MPI_Comm (collectives use a separate context).
constexpr int kTagArrive = 11;
constexpr int kTagVerdict = 12;
constexpr int kTagGiveUp = 13;
constexpr int kTagSplitHello = 14;
constexpr int kTagSplitGo = 15;

constexpr size_t kMaxMessage = 8192;
// Largest element count of one MPI call (counts are int); larger all-reduces and broadcasts go in
// chunks.
constexpr size_t kChunk = size_t{1} << 30;

enum class Verdict : uint8_t { Go = 0, Mismatch = 1, Timeout = 2, Aborted = 3 };

// The Work of a collective: the comm layer's one implementation (serial_executor.hpp).
using MpiWork = CompletionWork;

struct Task {
  Fingerprint fingerprint;
  BufferView input;
  BufferView output;
  Milliseconds timeout{0};
  std::string debugName;
  std::shared_ptr<MpiWork> work;
};

// ---- messages

void putU64(std::string& s, uint64_t v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
uint64_t getU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr int kFingerprintWords = 6;
using Packed = std::array<uint64_t, kFingerprintWords>;

Packed pack(const Fingerprint& f) {
  return {static_cast<uint64_t>(f.kind), f.seq, f.count, static_cast<uint64_t>(f.type),
          static_cast<uint64_t>(f.op), static_cast<uint64_t>(static_cast<int64_t>(f.root))};
}
Fingerprint unpack(const Packed& p) {
  Fingerprint f;
  f.kind = static_cast<OpKind>(p[0]);
  f.seq = p[1];
  f.count = p[2];
  f.type = static_cast<DataType>(p[3]);
  f.op = static_cast<Op>(p[4]);
  f.root = static_cast<int>(static_cast<int64_t>(p[5]));
  return f;
}

uint64_t hashString(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// ---- data types and operators

MPI_Datatype bytesType(size_t elementSize) {
  static std::mutex mu;
  static std::map<size_t, MPI_Datatype> types;  // committed once, never freed
  std::lock_guard lock(mu);
  auto it = types.find(elementSize);
  if (it != types.end()) return it->second;
  MPI_Datatype t = MPI_DATATYPE_NULL;
  MpiLock mpiLock;
  check(MPI_Type_contiguous(static_cast<int>(elementSize), MPI_BYTE, &t), "MPI_Type_contiguous");
  check(MPI_Type_commit(&t), "MPI_Type_commit");
  types[elementSize] = t;
  return t;
}

void halfMin(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    if (halfToFloat(a[i]) < halfToFloat(b[i])) b[i] = a[i];
  }
}
void halfMax(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    if (halfToFloat(a[i]) > halfToFloat(b[i])) b[i] = a[i];
  }
}

// UINT8 sums and products wrap modulo 256. Not MPI_SUM/MPI_PROD: Open MPI 4.1's AVX kernels
// saturate 8-bit sums at 255.
void u8Sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint8_t*>(in);
  auto* b = static_cast<uint8_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<uint8_t>(a[i] + b[i]);
}
void u8Prod(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint8_t*>(in);
  auto* b = static_cast<uint8_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<uint8_t>(a[i] * b[i]);
}

enum class UserOp { HalfMin, HalfMax, U8Sum, U8Prod };

MPI_Op userOp(UserOp which) {
  static std::once_flag once;
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  std::call_once(once, [] {
    MpiLock lock;
    check(MPI_Op_create(&halfMin, 1, &ops[0]), "MPI_Op_create");
    check(MPI_Op_create(&halfMax, 1, &ops[1]), "MPI_Op_create");
    check(MPI_Op_create(&u8Sum, 1, &ops[2]), "MPI_Op_create");
    check(MPI_Op_create(&u8Prod, 1, &ops[3]), "MPI_Op_create");
  });
  return ops[static_cast<int>(which)];
}

// How a reduction runs over MPI: the type on the wire, the local step before (normalise, square,
// widen) and after (divide, narrow).
struct Plan {
  DataType wire = DataType::FLOAT;  // FLOAT, FLOAT16, INT32, INT64 or UINT8
  MPI_Datatype mpiType = MPI_DATATYPE_NULL;
  MPI_Op mpiOp = MPI_OP_NULL;
  enum class Pre { None, Normalize, Square } pre = Pre::None;
  bool mean = false;  // divide by the group size afterwards
  bool widen() const { return wire != type; }
  DataType type = DataType::FLOAT;  // the user's type
};

MPI_Datatype mpiTypeOf(DataType t, bool wrapping) {
  switch (t) {
    case DataType::FLOAT: return MPI_FLOAT;
    case DataType::FLOAT16: return MPI_UINT16_T;
    case DataType::INT32: return wrapping ? MPI_UINT32_T : MPI_INT32_T;
    case DataType::INT64: return wrapping ? MPI_UINT64_T : MPI_INT64_T;
    case DataType::UINT8: return MPI_UINT8_T;
    default: break;
  }
  throw internal_error("mpi: no MPI type for {}", dataTypeName(t));
}

Plan planFor(DataType type, Op op) {
  Plan p;
  p.type = type;
  p.wire = type;
  const bool half = type == DataType::FLOAT16;
  switch (op) {
    case Op::Add:
    case Op::Mean:
    case Op::SquareAdd:
      if (half) p.wire = DataType::FLOAT;
      if (op == Op::Mean && (type == DataType::INT32 || type == DataType::UINT8)) {
        p.wire = DataType::INT64;
      }
      p.mpiOp = MPI_SUM;
      p.mean = op == Op::Mean;
      if (op == Op::SquareAdd) p.pre = Plan::Pre::Square;
      break;
    case Op::Mul:
      if (half) p.wire = DataType::FLOAT;
      p.mpiOp = MPI_PROD;
      break;
    case Op::Min:
    case Op::Max:
      p.mpiOp = half ? userOp(op == Op::Max ? UserOp::HalfMax : UserOp::HalfMin)
                     : (op == Op::Max ? MPI_MAX : MPI_MIN);
      p.mpiType = half ? MPI_UINT16_T : mpiTypeOf(type, false);
      return p;
    case Op::LogicalAnd:
    case Op::LogicalOr:
      // 0/1 values (half: 0x0000/0x3C00) order the same as unsigned integers.
      p.pre = Plan::Pre::Normalize;
      p.mpiOp = op == Op::LogicalAnd ? MPI_MIN : MPI_MAX;
      p.mpiType = half ? MPI_UINT16_T : mpiTypeOf(type, false);
      return p;
    case Op::Local: throw internal_error("mpi: Local is not a reduction");
  }
  p.mpiType = mpiTypeOf(p.wire, true);
  if (p.wire == DataType::UINT8) p.mpiOp = userOp(p.mpiOp == MPI_SUM ? UserOp::U8Sum : UserOp::U8Prod);
  return p;
}

// dst[i] = pre(src[i]) converted to the wire type. dst may equal src when the types match.
template <typename From, typename To>
void prepareTyped(const From* src, To* dst, size_t n, Plan::Pre pre) {
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<From, uint16_t>) {  // FLOAT16 stored as bits
      const float x = halfToFloat(src[i]);
      float v = x;
      if (pre == Plan::Pre::Square) v = x * x;
      if constexpr (std::is_same_v<To, uint16_t>) {
        dst[i] = pre == Plan::Pre::Normalize ? (x != 0.0f ? uint16_t{0x3C00} : uint16_t{0})
                                             : floatToHalf(v);
      } else {
        dst[i] = pre == Plan::Pre::Normalize ? (x != 0.0f ? To(1) : To(0)) : static_cast<To>(v);
      }
    } else if constexpr (std::is_floating_point_v<From>) {
      const From x = src[i];
      dst[i] = pre == Plan::Pre::Normalize ? (x != From(0) ? To(1) : To(0))
               : pre == Plan::Pre::Square  ? static_cast<To>(x * x)
                                           : static_cast<To>(x);
    } else {
      // Integers: wrap through the unsigned type of the same width.
      using U = std::make_unsigned_t<From>;
      const From x = src[i];
      if (pre == Plan::Pre::Normalize) {
        dst[i] = x != 0 ? To(1) : To(0);
      } else if (pre == Plan::Pre::Square) {
        dst[i] = static_cast<To>(static_cast<From>(static_cast<U>(static_cast<U>(x) * static_cast<U>(x))));
      } else {
        dst[i] = static_cast<To>(x);
      }
    }
  }
}

template <typename T>
void prepareFrom(const T* src, void* dst, DataType wire, size_t n, Plan::Pre pre) {
  switch (wire) {
    case DataType::FLOAT: return prepareTyped(src, static_cast<float*>(dst), n, pre);
    case DataType::INT64: return prepareTyped(src, static_cast<int64_t*>(dst), n, pre);
    case DataType::INT32: return prepareTyped(src, static_cast<int32_t*>(dst), n, pre);
    case DataType::UINT8: return prepareTyped(src, static_cast<uint8_t*>(dst), n, pre);
    case DataType::FLOAT16: return prepareTyped(src, static_cast<uint16_t*>(dst), n, pre);
    default: throw internal_error("mpi: bad wire type");
  }
}

// Writes the wire form of `n` elements of `src` (the user's type) to `dst`.
void prepare(const Plan& p, const void* src, void* dst, size_t n) {
  switch (p.type) {
    case DataType::FLOAT: return prepareFrom(static_cast<const float*>(src), dst, p.wire, n, p.pre);
    case DataType::FLOAT16:
      return prepareFrom(static_cast<const uint16_t*>(src), dst, p.wire, n, p.pre);
    case DataType::INT32:
      return prepareFrom(static_cast<const int32_t*>(src), dst, p.wire, n, p.pre);
    case DataType::INT64:
      return prepareFrom(static_cast<const int64_t*>(src), dst, p.wire, n, p.pre);
    case DataType::UINT8:
      return prepareFrom(static_cast<const uint8_t*>(src), dst, p.wire, n, p.pre);
    default: throw internal_error("mpi: bad type");
  }
}

// dst[i] = the user's-type value of the reduced wire element src[i] (divided by k for Mean).
void finish(const Plan& p, const void* src, void* dst, size_t n, int k) {
  if (p.wire == DataType::FLOAT) {
    const auto* s = static_cast<const float*>(src);
    const float kf = static_cast<float>(k);
    if (p.type == DataType::FLOAT16) {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = floatToHalf(p.mean ? s[i] / kf : s[i]);
    } else {
      auto* d = static_cast<float*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = p.mean ? s[i] / kf : s[i];
    }
    return;
  }
  if (p.wire == DataType::INT64) {
    const auto* s = static_cast<const int64_t*>(src);
    const int64_t kk = k;
    auto value = [&](size_t i) { return p.mean ? s[i] / kk : s[i]; };
    switch (p.type) {
      case DataType::INT64: {
        auto* d = static_cast<int64_t*>(dst);
        for (size_t i = 0; i < n; ++i) d[i] = value(i);
        return;
      }
      case DataType::INT32: {
        auto* d = static_cast<int32_t*>(dst);
        for (size_t i = 0; i < n; ++i) d[i] = static_cast<int32_t>(value(i));
        return;
      }
      case DataType::UINT8: {
        auto* d = static_cast<uint8_t*>(dst);
        for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(value(i));
        return;
      }
      default: break;
    }
  }
  throw internal_error("mpi: bad finishing step");
}

// Post-reduction step in place on the user's type (no widening): the mean of FLOAT/INT64 sums.
bool needsFinish(const Plan& p) {
  return p.widen() || p.mean;
}

char* bytePtr(void* p, size_t offset) {
  return static_cast<char*>(p) + offset;
}

int toInt(size_t n) {
  return static_cast<int>(n);
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, std::string name, Milliseconds timeout)
      : comm_(comm), name_(std::move(name)), timeout_(timeout) {
    MpiLock lock;
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    worker_ = std::thread([this] { loop(); });
  }

  ~MpiCommunicator() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
    if (!finalizing()) {
      MpiLock lock;
      MPI_Comm_free(&comm_);  // pending operations (after a timeout) complete first, in MPI
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  const std::string& backendName() const override { return kBackendName; }
  Milliseconds timeout() const override { return timeout_; }

 protected:
  std::shared_ptr<Work> doAllReduce(BufferView in, BufferView out,
                                    const AllReduceOptions& o) override {
    Fingerprint f{OpKind::AllReduce, 0, in.count, in.type, o.op, 0};
    return enqueue(f, in, out, o.timeout, o.debugName);
  }
  std::shared_ptr<Work> doReduceScatter(BufferView in, BufferView out,
                                        const ReduceScatterOptions& o) override {
    const size_t padded = out.count * static_cast<size_t>(size_);
    if (o.op != Op::Local && padded > static_cast<size_t>(INT_MAX)) {
      throw error(
          "reduceScatter on group '{}': the mpi backend handles at most {} elements (padded) in "
          "one reduce-scatter, not {}",
          name_, INT_MAX, padded);
    }
    Fingerprint f{OpKind::ReduceScatter, 0, in.count, in.type, o.op, 0};
    return enqueue(f, in, out, o.timeout, o.debugName);
  }
  std::shared_ptr<Work> doAllGather(BufferView in, BufferView out,
                                    const AllGatherOptions& o) override {
    const size_t padded = shardCount(out.count, static_cast<size_t>(size_)) *
                          static_cast<size_t>(size_);
    if (padded > static_cast<size_t>(INT_MAX)) {
      throw error(
          "allGather on group '{}': the mpi backend handles at most {} elements (padded) in one "
          "all-gather, not {}",
          name_, INT_MAX, padded);
    }
    Fingerprint f{OpKind::AllGather, 0, out.count, out.type, Op::Add, 0};
    return enqueue(f, in, out, o.timeout, o.debugName);
  }
  std::shared_ptr<Work> doBroadcast(BufferView in, BufferView out,
                                    const BroadcastOptions& o) override {
    Fingerprint f{OpKind::Broadcast, 0, out.count, out.type, Op::Add, o.root};
    return enqueue(f, in, out, o.timeout, o.debugName);
  }
  std::shared_ptr<Work> doBarrier(const BarrierOptions& o) override {
    Fingerprint f{OpKind::Barrier, 0, 0, DataType::UNDEFINED, Op::Add, 0};
    return enqueue(f, {}, {}, o.timeout, o.debugName);
  }
  std::shared_ptr<Communicator> doSplit(const std::vector<int>& ranks,
                                        const std::string& splitName) override;

 private:
  std::shared_ptr<Work> enqueue(Fingerprint f, BufferView in, BufferView out,
                                std::optional<Milliseconds> timeout, const std::string& debugName) {
    std::shared_ptr<MpiWork> work;
    {
      std::lock_guard lock(mu_);
      f.seq = nextSeq_++;
      std::string what = describe(f);
      if (!debugName.empty()) what += " '" + debugName + "'";
      logging::comm::trace("group '{}' rank {}: issue {}", name_, rank_, what);
      work = std::make_shared<MpiWork>(what);
      queue_.push_back(Task{f, in, out, timeout ? *timeout : timeout_, debugName, work});
    }
    cv_.notify_all();
    return work;
  }

  void loop() {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        execute(task);
        task.work->finish(nullptr);
      } catch (...) {
        task.work->finish(std::current_exception());
      }
    }
  }

  std::string what(const Task& t) const {
    return t.debugName.empty() ? describe(t.fingerprint)
                               : describe(t.fingerprint) + " '" + t.debugName + "'";
  }

  // The first failure wins; later collectives fail with CommAbortedError carrying it.
  void abort(const std::string& message) {
    std::lock_guard lock(failMu_);
    if (!failed_) {
      failed_ = true;
      failure_ = message;
    }
  }
  void throwIfAborted() const {
    std::lock_guard lock(failMu_);
    if (failed_) {
      throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name_,
                             failure_);
    }
  }
  [[noreturn]] void fail(Verdict kind, const std::string& message) {
    abort(message);
    logging::comm::err("{}", message);
    switch (kind) {
      case Verdict::Mismatch: throw CommMismatchError(message);
      case Verdict::Timeout: throw CommTimeoutError(message);
      default:
        throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name_,
                               message);
    }
  }

  void execute(const Task& t);
  void arrive(const Task& t);
  void arriveAsRoot(const Task& t);
  void arriveAsMember(const Task& t);
  // Starts a non-blocking collective (under the MPI lock) and polls it until done or the timeout.
  void transfer(const Task& t, Clock::time_point deadline,
                const std::function<int(MPI_Request*)>& start);
  void allReduce(const Task& t, Clock::time_point deadline);
  void reduceScatter(const Task& t, Clock::time_point deadline);
  void allGather(const Task& t, Clock::time_point deadline);
  void broadcast(const Task& t, Clock::time_point deadline);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  const std::string name_;
  const Milliseconds timeout_;

  mutable std::mutex failMu_;
  bool failed_ = false;
  std::string failure_;

  std::mutex mu_;  // guards the queue, nextSeq_ and the split bookkeeping
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  uint64_t nextSeq_ = 0;
  std::map<std::string, int> splitCounts_;
  std::set<uint64_t> failedSplits_;  // split identities this rank led or left after a failure

  std::thread worker_;  // started last, in the constructor body
};

void MpiCommunicator::execute(const Task& t) {
  throwIfAborted();
  if (finalizing()) {
    throw CommAbortedError("{} on group '{}': MPI was finalised", what(t), name_);
  }
  try {
    arrive(t);
    const Fingerprint& f = t.fingerprint;
    const auto deadline = Clock::now() + t.timeout;
    switch (f.kind) {
      case OpKind::Barrier: return;
      case OpKind::AllReduce: return allReduce(t, deadline);
      case OpKind::ReduceScatter: return reduceScatter(t, deadline);
      case OpKind::AllGather: return allGather(t, deadline);
      case OpKind::Broadcast: return broadcast(t, deadline);
    }
  } catch (const CommTimeoutError&) {
    throw;  // already aborted
  } catch (const CommMismatchError&) {
    throw;
  } catch (const CommAbortedError&) {
    throw;
  } catch (const std::exception& e) {
    // An MPI error (or a bug) part-way: the peers may be inside this collective; stop here.
    abort(format("{} in group '{}' failed: {}", what(t), name_, e.what()));
    throw;
  }
}

// ---- arrival phase

void MpiCommunicator::arrive(const Task& t) {
  if (size_ == 1) return;
  if (rank_ == 0) {
    arriveAsRoot(t);
  } else {
    arriveAsMember(t);
  }
}

void MpiCommunicator::arriveAsRoot(const Task& t) {
  const Fingerprint& mine = t.fingerprint;
  const size_t k = static_cast<size_t>(size_);
  const auto deadline = Clock::now() + t.timeout;
  std::vector<Packed> fps(k);
  std::vector<MPI_Request> reqs(k - 1, MPI_REQUEST_NULL);
  {
    MpiLock lock;
    for (size_t p = 1; p < k; ++p) {
      check(MPI_Irecv(fps[p].data(), kFingerprintWords, MPI_UINT64_T, toInt(p), kTagArrive, comm_,
                      &reqs[p - 1]),
            "MPI_Irecv");
    }
  }
  std::vector<int> indices(k);
  std::string failure;
  Verdict kind = Verdict::Go;
  std::vector<char> missing(k, 0);
  // A member that gave up waiting for this rank: this rank was late.
  auto checkGiveUp = [&]() -> bool {
    int flag = 0;
    MPI_Status st;
    MpiLock lock;
    check(MPI_Iprobe(MPI_ANY_SOURCE, kTagGiveUp, comm_, &flag, &st), "MPI_Iprobe");
    if (!flag) return false;
    uint64_t seq = 0;
    check(MPI_Recv(&seq, 1, MPI_UINT64_T, st.MPI_SOURCE, kTagGiveUp, comm_, MPI_STATUS_IGNORE),
          "MPI_Recv");
    failure = format(
        "{} in group '{}' (size {}) timed out: ranks [0] did not arrive in time (rank {} gave up "
        "waiting for rank 0 at seq {})",
        what(t), name_, size_, st.MPI_SOURCE, seq);
    kind = Verdict::Aborted;
    return true;
  };
  Backoff backoff(false);
  for (;;) {
    int outcount = 0;
    {
      MpiLock lock;
      check(MPI_Testsome(toInt(k - 1), reqs.data(), &outcount, indices.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
    }
    if (outcount == MPI_UNDEFINED) break;  // all complete
    if (checkGiveUp()) break;
    if (!backoff.pause(deadline)) {
      std::vector<int> absent;
      for (size_t p = 1; p < k; ++p) {
        if (reqs[p - 1] != MPI_REQUEST_NULL && cancelReceive(reqs[p - 1])) {
          missing[p] = 1;
          absent.push_back(toInt(p));
        }
      }
      if (absent.empty()) break;  // they all arrived while cancelling
      failure = format("{} in group '{}' (size {}) timed out after {} ms: ranks {} did not arrive",
                       what(t), name_, size_, t.timeout.count(), absent);
      kind = Verdict::Timeout;
      break;
    }
  }
  if (kind != Verdict::Go) {
    for (auto& r : reqs) {
      if (r != MPI_REQUEST_NULL) cancelReceive(r);
    }
  } else {
    checkGiveUp();
  }
  if (kind == Verdict::Go) {
    fps[0] = pack(mine);
    for (size_t p = 1; p < k; ++p) {
      if (fps[p] != fps[0]) {
        failure = format(
            "collective mismatch in group '{}' (size {}): rank 0 called {} but rank {} called {}",
            name_, size_, describe(mine), p, describe(unpack(fps[p])));
        kind = Verdict::Mismatch;
        break;
      }
    }
  }
  // The verdict: ranks that did not arrive get "aborted" (when they do arrive, they fail at once).
  std::vector<std::string> messages(k);
  std::vector<MPI_Request> sends(k - 1, MPI_REQUEST_NULL);
  {
    MpiLock lock;
    for (size_t p = 1; p < k; ++p) {
      std::string& m = messages[p];
      const Verdict v = (kind == Verdict::Timeout && missing[p]) ? Verdict::Aborted : kind;
      m.push_back(static_cast<char>(v));
      putU64(m, mine.seq);
      m += failure.substr(0, kMaxMessage - 16);
      check(MPI_Isend(m.data(), toInt(m.size()), MPI_CHAR, toInt(p), kTagVerdict, comm_,
                      &sends[p - 1]),
            "MPI_Isend");
    }
  }
  // Small messages go out eagerly; give them a bounded time, then let MPI finish them.
  for (auto& r : sends) {
    if (!pollUntil(r, Clock::now() + std::chrono::seconds(2), true)) {
      MpiLock lock;
      MPI_Request_free(&r);
    }
  }
  if (kind != Verdict::Go) fail(kind, failure);
}

void MpiCommunicator::arriveAsMember(const Task& t) {
  const Packed mine = pack(t.fingerprint);
  // Rank 0 decides timeouts; wait a little longer than it does before blaming it.
  const Milliseconds grace = std::min(t.timeout, Milliseconds(2000));
  const auto deadline = Clock::now() + t.timeout + grace;
  std::vector<char> buf(kMaxMessage);
  MPI_Request send = MPI_REQUEST_NULL;
  MPI_Request recv = MPI_REQUEST_NULL;
  {
    MpiLock lock;
    check(MPI_Isend(mine.data(), kFingerprintWords, MPI_UINT64_T, 0, kTagArrive, comm_, &send),
          "MPI_Isend");
    check(MPI_Irecv(buf.data(), toInt(buf.size()), MPI_CHAR, 0, kTagVerdict, comm_, &recv),
          "MPI_Irecv");
  }
  MPI_Status st;
  bool got = pollUntil(recv, deadline, false, &st);
  if (!got && !cancelReceive(recv, &st)) got = true;  // it came while cancelling
  if (!got) {
    {
      MpiLock lock;
      if (send != MPI_REQUEST_NULL) MPI_Request_free(&send);
      // Tell rank 0, so that it fails instead of starting the data phase without this rank.
      uint64_t seq = t.fingerprint.seq;
      MPI_Request giveUp = MPI_REQUEST_NULL;
      if (MPI_Isend(&seq, 1, MPI_UINT64_T, 0, kTagGiveUp, comm_, &giveUp) == MPI_SUCCESS) {
        MPI_Request_free(&giveUp);  // eager: the value is copied out at once
      }
    }
    fail(Verdict::Timeout,
         format("{} in group '{}' (size {}) timed out after {} ms: ranks [0] did not arrive (rank 0 "
                "coordinates every collective of the mpi backend; other ranks may be missing too)",
                what(t), name_, size_, (t.timeout + grace).count()));
  }
  if (!pollUntil(send, Clock::now() + std::chrono::seconds(2), true)) {
    MpiLock lock;
    MPI_Request_free(&send);
  }
  int len = 0;
  MPI_Get_count(&st, MPI_CHAR, &len);
  if (len < 9) throw internal_error("mpi: short verdict ({} bytes) in group '{}'", len, name_);
  const auto v = static_cast<Verdict>(buf[0]);
  const uint64_t seq = getU64(buf.data() + 1);
  if (seq != t.fingerprint.seq && v == Verdict::Go) {
    throw internal_error("mpi: verdict for seq {} while running {} in group '{}'", seq, what(t),
                         name_);
  }
  if (v == Verdict::Go) return;
  fail(v, std::string(buf.data() + 9, static_cast<size_t>(len) - 9));
}

// ---- data phase

void MpiCommunicator::transfer(const Task& t, Clock::time_point deadline,
                               const std::function<int(MPI_Request*)>& start) {
  MPI_Request req = MPI_REQUEST_NULL;
  {
    MpiLock lock;
    check(start(&req), format("{} on group '{}'", what(t), name_));
  }
  if (pollUntil(req, deadline, true)) return;
  const std::string msg = format(
      "{} in group '{}' (size {}) timed out after {} ms while transferring data (every rank had "
      "arrived; a peer may be stuck or dead). MPI cannot cancel the pending collective: end this "
      "process (MPI_Finalize is skipped at exit, and the launcher ends the job)",
      what(t), name_, size_, t.timeout.count());
  markPoisoned(msg);
  fail(Verdict::Timeout, msg);
}

void MpiCommunicator::allReduce(const Task& t, Clock::time_point deadline) {
  const Fingerprint& f = t.fingerprint;
  const size_t n = f.count;
  const size_t es = dataTypeSize(f.type);
  if (f.op == Op::Local) {
    if (n > 0 && t.input.data != t.output.data) std::memcpy(t.output.data, t.input.data, n * es);
    return;
  }
  if (n == 0) return;
  const Plan plan = planFor(f.type, f.op);
  // The buffer reduced in place (MPI_IN_PLACE) or, without a local step, input -> output.
  std::vector<char> scratch;
  void* wire = t.output.data;
  const void* send = t.input.data == t.output.data ? MPI_IN_PLACE : t.input.data;
  if (plan.widen()) {
    scratch.resize(n * dataTypeSize(plan.wire));
    wire = scratch.data();
    prepare(plan, t.input.data, wire, n);
    send = MPI_IN_PLACE;
  } else if (plan.pre != Plan::Pre::None) {
    prepare(plan, t.input.data, wire, n);
    send = MPI_IN_PLACE;
  }
  const size_t wes = dataTypeSize(plan.wire);
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t len = std::min(kChunk, n - begin);
    const void* s = send == MPI_IN_PLACE ? MPI_IN_PLACE
                                         : static_cast<const char*>(send) + begin * wes;
    void* r = bytePtr(wire, begin * wes);
    transfer(t, deadline, [&](MPI_Request* req) {
      return MPI_Iallreduce(s, r, toInt(len), plan.mpiType, plan.mpiOp, comm_, req);
    });
  }
  if (needsFinish(plan)) finish(plan, wire, t.output.data, n, size_);
}

void MpiCommunicator::reduceScatter(const Task& t, Clock::time_point deadline) {
  const Fingerprint& f = t.fingerprint;
  const size_t n = f.count;
  const size_t k = static_cast<size_t>(size_);
  const size_t es = dataTypeSize(f.type);
  const size_t s = shardCount(n, k);
  const size_t r = static_cast<size_t>(rank_);
  const size_t begin = r * s;
  const size_t valid = begin < n ? std::min(s, n - begin) : 0;
  if (s == 0) return;
  if (f.op == Op::Local) {
    if (valid > 0) {
      std::memmove(t.output.data, static_cast<const char*>(t.input.data) + begin * es, valid * es);
    }
  } else {
    const Plan plan = planFor(f.type, f.op);
    const size_t wes = dataTypeSize(plan.wire);
    const bool inPlace = t.input.data == t.output.data;
    // Send buffer: k*s wire elements, zero-padded past n.
    std::vector<char> sendScratch;
    const void* send = t.input.data;
    if (inPlace || k * s != n || plan.widen() || plan.pre != Plan::Pre::None) {
      sendScratch.assign(k * s * wes, 0);
      prepare(plan, t.input.data, sendScratch.data(), n);
      send = sendScratch.data();
    }
    std::vector<char> recvScratch;
    void* recv = t.output.data;
    if (needsFinish(plan)) {
      recvScratch.resize(s * wes);
      recv = recvScratch.data();
    }
    transfer(t, deadline, [&](MPI_Request* req) {
      return MPI_Ireduce_scatter_block(send, recv, toInt(s), plan.mpiType, plan.mpiOp, comm_, req);
    });
    if (needsFinish(plan)) finish(plan, recv, t.output.data, s, size_);
  }
  if (s > valid) std::memset(bytePtr(t.output.data, valid * es), 0, (s - valid) * es);
}

void MpiCommunicator::allGather(const Task& t, Clock::time_point deadline) {
  const Fingerprint& f = t.fingerprint;
  const size_t n = f.count;
  const size_t k = static_cast<size_t>(size_);
  const size_t es = dataTypeSize(f.type);
  const size_t s = shardCount(n, k);
  const size_t r = static_cast<size_t>(rank_);
  if (n == 0) return;
  const MPI_Datatype type = bytesType(es);
  std::vector<char> scratch;
  void* recv = t.output.data;
  if (k * s != n) {
    scratch.resize(k * s * es);
    recv = scratch.data();
  }
  const void* send = t.input.data;
  if (t.input.data == t.output.data) {
    // This rank's shard is at the start of the buffer; MPI_IN_PLACE wants it at r*s.
    if (recv != t.input.data || r != 0) {
      std::memmove(bytePtr(recv, r * s * es), t.input.data, s * es);
    }
    send = MPI_IN_PLACE;
  }
  transfer(t, deadline, [&](MPI_Request* req) {
    return MPI_Iallgather(send, toInt(s), type, recv, toInt(s), type, comm_, req);
  });
  if (recv != t.output.data) std::memcpy(t.output.data, recv, n * es);
}

void MpiCommunicator::broadcast(const Task& t, Clock::time_point deadline) {
  const Fingerprint& f = t.fingerprint;
  const size_t n = f.count;
  const size_t es = dataTypeSize(f.type);
  if (n == 0) return;
  if (rank_ == f.root && t.input.data != t.output.data) {
    std::memcpy(t.output.data, t.input.data, n * es);
  }
  const MPI_Datatype type = bytesType(es);
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t len = std::min(kChunk, n - begin);
    void* p = bytePtr(t.output.data, begin * es);
    transfer(t, deadline,
             [&](MPI_Request* req) { return MPI_Ibcast(p, toInt(len), type, f.root, comm_, req); });
  }
}

// ---- split

std::shared_ptr<Communicator> MpiCommunicator::doSplit(const std::vector<int>& ranks,
                                                       const std::string& splitName) {
  throwIfAborted();
  std::string base = splitName + "|";
  for (int r : ranks) base += std::to_string(r) + ",";
  int generation = 0;
  {
    std::lock_guard lock(mu_);
    generation = splitCounts_[base]++;
  }
  const std::string identity = base + "|" + std::to_string(generation);
  const uint64_t id = hashString(identity);
  const std::string childName = name_ + "/" + splitName;
  const std::string what =
      format("split of group '{}' into '{}' with parent ranks {}", name_, splitName, ranks);
  const int leader = ranks[0];
  const auto deadline = Clock::now() + timeout_;
  // Hello: [id, gave-up flag]; go: [id, verdict] + message.
  if (ranks.size() > 1 && rank_ == leader) {
    const size_t m = ranks.size();
    std::vector<std::array<uint64_t, 2>> hello(m);
    std::vector<MPI_Request> reqs(m, MPI_REQUEST_NULL);
    auto post = [&](size_t i) {
      MpiLock lock;
      check(MPI_Irecv(hello[i].data(), 2, MPI_UINT64_T, ranks[i], kTagSplitHello, comm_, &reqs[i]),
            "MPI_Irecv");
    };
    for (size_t i = 1; i < m; ++i) post(i);
    std::string failure;
    Verdict kind = Verdict::Go;
    std::vector<char> arrived(m, 0);
    arrived[0] = 1;
    Backoff backoff(false);
    for (;;) {
      bool pending = false;
      for (size_t i = 1; i < m && kind == Verdict::Go; ++i) {
        if (arrived[i]) continue;
        int done = 0;
        {
          MpiLock lock;
          check(MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE), "MPI_Test");
        }
        if (!done) {
          pending = true;
          continue;
        }
        bool stale = false;
        {
          std::lock_guard lock(mu_);
          stale = hello[i][0] != id && failedSplits_.count(hello[i][0]) > 0;
        }
        if (stale) {  // a late message of an earlier failed split
          post(i);
          pending = true;
        } else if (hello[i][0] != id) {
          failure = format(
              "{}: rank {} called a different split (split calls must match on every member, in "
              "the same order)",
              what, ranks[i]);
          kind = Verdict::Mismatch;
        } else if (hello[i][1] != 0) {
          failure = format("{} timed out: rank {} gave up waiting for rank {} (the leader)", what,
                           ranks[i], leader);
          kind = Verdict::Timeout;
        } else {
          arrived[i] = 1;
        }
      }
      if (kind != Verdict::Go || !pending) break;
      if (!backoff.pause(deadline)) {
        std::vector<int> absent;
        for (size_t i = 1; i < m; ++i) {
          if (!arrived[i] && cancelReceive(reqs[i])) {
            absent.push_back(ranks[i]);
          } else {
            arrived[i] = 1;
          }
        }
        if (absent.empty()) break;
        failure = format("{} timed out after {} ms: ranks {} did not arrive", what,
                         timeout_.count(), absent);
        kind = Verdict::Timeout;
        break;
      }
    }
    for (size_t i = 1; i < m; ++i) {
      if (reqs[i] != MPI_REQUEST_NULL) cancelReceive(reqs[i]);
    }
    if (kind != Verdict::Go) {
      std::lock_guard lock(mu_);
      failedSplits_.insert(id);
    }
    std::vector<std::string> messages(m);
    for (size_t i = 1; i < m; ++i) {
      std::string& msg = messages[i];
      putU64(msg, id);
      msg.push_back(static_cast<char>(kind));
      msg += failure.substr(0, kMaxMessage - 16);
      MPI_Request req = MPI_REQUEST_NULL;
      {
        MpiLock lock;
        check(MPI_Isend(msg.data(), toInt(msg.size()), MPI_CHAR, ranks[i], kTagSplitGo, comm_,
                        &req),
              "MPI_Isend");
      }
      if (!pollUntil(req, Clock::now() + std::chrono::seconds(2), true)) {
        MpiLock lock;
        MPI_Request_free(&req);
      }
    }
    if (kind == Verdict::Mismatch) throw CommMismatchError(failure);
    if (kind != Verdict::Go) throw CommTimeoutError(failure);
  } else if (ranks.size() > 1) {
    std::array<uint64_t, 2> hello = {id, 0};
    std::vector<char> buf(kMaxMessage);
    MPI_Request send = MPI_REQUEST_NULL;
    {
      MpiLock lock;
      check(MPI_Isend(hello.data(), 2, MPI_UINT64_T, leader, kTagSplitHello, comm_, &send),
            "MPI_Isend");
    }
    const Milliseconds grace = std::min(timeout_, Milliseconds(2000));
    for (;;) {
      MPI_Request recv = MPI_REQUEST_NULL;
      {
        MpiLock lock;
        check(MPI_Irecv(buf.data(), toInt(buf.size()), MPI_CHAR, leader, kTagSplitGo, comm_, &recv),
              "MPI_Irecv");
      }
      MPI_Status st;
      bool got = pollUntil(recv, deadline + grace, false, &st);
      if (!got && !cancelReceive(recv, &st)) got = true;
      if (!got) {
        {
          std::lock_guard lock(mu_);
          failedSplits_.insert(id);
        }
        std::array<uint64_t, 2> giveUp = {id, 1};
        MPI_Request req = MPI_REQUEST_NULL;
        {
          MpiLock lock;
          if (send != MPI_REQUEST_NULL) MPI_Request_free(&send);
          check(MPI_Isend(giveUp.data(), 2, MPI_UINT64_T, leader, kTagSplitHello, comm_, &req),
                "MPI_Isend");
        }
        if (!pollUntil(req, Clock::now() + std::chrono::seconds(2), true)) {
          MpiLock lock;
          MPI_Request_free(&req);
        }
        throw CommTimeoutError("{} timed out after {} ms: ranks [{}] did not arrive (the leader)",
                               what, (timeout_ + grace).count(), leader);
      }
      int len = 0;
      MPI_Get_count(&st, MPI_CHAR, &len);
      if (len < 9) throw internal_error("mpi: short split message in group '{}'", name_);
      const uint64_t gotId = getU64(buf.data());
      if (gotId != id) {
        std::lock_guard lock(mu_);
        if (failedSplits_.count(gotId)) continue;  // the answer to a split this rank left
      }
      if (gotId != id) {
        throw CommMismatchError("{}: the leader (rank {}) answered a different split", what,
                                leader);
      }
      if (!pollUntil(send, Clock::now() + std::chrono::seconds(2), true)) {
        MpiLock lock;
        MPI_Request_free(&send);
      }
      const auto v = static_cast<Verdict>(buf[8]);
      if (v == Verdict::Go) break;
      const std::string msg(buf.data() + 9, static_cast<size_t>(len) - 9);
      if (v == Verdict::Mismatch) throw CommMismatchError(msg);
      throw CommTimeoutError(msg);
    }
  }
  // Every member arrived: MPI_Comm_create_group among them completes promptly.
  MPI_Comm child = MPI_COMM_NULL;
  {
    MpiLock lock;
    MPI_Group parentGroup = MPI_GROUP_NULL;
    MPI_Group group = MPI_GROUP_NULL;
    check(MPI_Comm_group(comm_, &parentGroup), what + ": MPI_Comm_group");
    check(MPI_Group_incl(parentGroup, toInt(ranks.size()), ranks.data(), &group),
          what + ": MPI_Group_incl");
    const int tag = 1000 + static_cast<int>(id % 30000);
    const int rc = MPI_Comm_create_group(comm_, group, tag, &child);
    MPI_Group_free(&group);
    MPI_Group_free(&parentGroup);
    check(rc, what + ": MPI_Comm_create_group");
    MPI_Comm_set_errhandler(child, MPI_ERRORS_RETURN);
  }
  return std::make_shared<MpiCommunicator>(child, childName, timeout_);
}

}  // namespace

bool launchedByMpi() {
  return launchedByMpiEnv();
}

std::optional<LaunchInfo> launchInfo() {
  auto env = [](const char* name) -> std::optional<int> {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < 0 || x > INT_MAX) return std::nullopt;
    return static_cast<int>(x);
  };
  const std::pair<const char*, const char*> sources[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMIX_RANK", "SLURM_NTASKS"},
      {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"}};
  if (!launchedByMpi()) return std::nullopt;
  for (const auto& [rankVar, sizeVar] : sources) {
    const auto r = env(rankVar);
    const auto s = env(sizeVar);
    if (r && s && *r < *s) return LaunchInfo{*r, *s};
  }
  return std::nullopt;
}

std::shared_ptr<Communicator> createCommunicator(const CommConfig& config) {
  if (!launchedByMpi()) {
    throw error(
        "comm backend 'mpi' needs the processes started by mpirun or srun (none of "
        "OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE is set); start the job with e.g. 'mpirun -np "
        "{}', or choose another backend (XTRAIN_COMM_BACKEND=shm or gloo)",
        config.size);
  }
  ensureInitialized();
  int worldRank = 0;
  int worldSize = 0;
  {
    MpiLock lock;
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  }
  if (config.rank != worldRank || config.size != worldSize) {
    throw error(
        "comm backend 'mpi': group '{}' is configured as rank {} of {}, but this process is rank "
        "{} of {} in MPI_COMM_WORLD; with the mpi backend the ranks are the processes of the MPI "
        "job (use the MPI rank and size, e.g. from OMPI_COMM_WORLD_RANK/SIZE)",
        config.name, config.rank, config.size, worldRank, worldSize);
  }
  const Milliseconds timeout = config.timeout ? *config.timeout : defaultTimeout();
  MPI_Comm comm = dupComm(MPI_COMM_WORLD, timeout, format("creation of group '{}'", config.name));
  logging::comm::debug("mpi: rank {} of {} joined group '{}'", worldRank, worldSize, config.name);
  return std::make_shared<MpiCommunicator>(comm, config.name, timeout);
}

}  // namespace xtrain::comm::mpi
