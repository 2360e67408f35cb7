// MpiTransport: one rank (process) of an MPI communicator, under a QueuedCommunicator (whose
// executor thread runs the collectives in issue order, so asynchronous collectives overlap with the
// caller's work).
//
// Every collective has two phases:
//   1. arrival: an agreement led by rank 0 (agreement.hpp): every rank sends its fingerprint to
//      rank 0 and waits for its verdict, "go", "mismatch: rank 0 called ... but rank p called ..."
//      or, when some ranks do not arrive in time, "timed out: ranks [..] did not arrive". These are
//      receives, which MPI can cancel, so a timeout here leaves nothing pending.
//   2. data: an MPI non-blocking collective (MPI_Iallreduce, MPI_Ireduce_scatter_block,
//      MPI_Iallgather, MPI_Ibcast) polled with MPI_Test until it completes or the timeout passes.
//      MPI cannot cancel a collective: after a timeout here the request stays pending, the process
//      is marked so that MPI_Finalize is skipped at exit (it could hang), and the launcher ends the
//      job when this process exits.
// A split is an agreement led by its first member, then MPI_Comm_create_group.
// Barrier is the arrival phase alone; so is the Local operator (plus a local copy).
//
// Operators map to MPI's built-in ones where they match (sum and product on unsigned types, which
// wrap like the contract says; min and max on the signed ones). LogicalAnd/LogicalOr normalise each
// value to 0/1 locally, then take the min/max. SquareAdd squares locally, then sums. Mean sums,
// then divides (INT32 and UINT8 sum in INT64 so the mean is exact). FLOAT16 sums and products widen
// to FLOAT (reduced in float, like the reference); its min/max use user-defined MPI_Ops, and so do
// UINT8 sums and products (Open MPI 4.1's AVX kernels saturate 8-bit sums instead of wrapping).
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <type_traits>

#include "comm/backends/mpi/agreement.hpp"
#include "comm/backends/mpi/mpi.hpp"
#include "comm/backends/mpi/runtime.hpp"
#include "comm/queued_communicator.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::mpi {

namespace {

const std::string kBackendName = "mpi";
using Op = CollectiveOperator;

// Point-to-point tags on a communicator's own MPI_Comm (collectives use a separate context), one
// set per kind of agreement (agreement.hpp).
constexpr AgreementTags kArrivalTags{11, 12, 13};
constexpr AgreementTags kSplitTags{14, 15, 16};

// Largest element count of one MPI call (counts are int); larger all-reduces and broadcasts go in
// chunks.
constexpr size_t kChunk = size_t{1} << 30;

// ---- messages

std::vector<uint64_t> pack(const Fingerprint& f) {
  return {static_cast<uint64_t>(f.kind),
          f.seq,
          f.count,
          static_cast<uint64_t>(f.type),
          static_cast<uint64_t>(f.op),
          static_cast<uint64_t>(static_cast<int64_t>(f.root))};
}
Fingerprint unpack(const std::vector<uint64_t>& p) {
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
  if (p.wire == DataType::UINT8)
    p.mpiOp = userOp(p.mpiOp == MPI_SUM ? UserOp::U8Sum : UserOp::U8Prod);
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
        dst[i] = static_cast<To>(
            static_cast<From>(static_cast<U>(static_cast<U>(x) * static_cast<U>(x))));
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

// The sizes of a sharded collective (reduce-scatter, all-gather) on this rank.
struct Layout {
  size_t n;   // elements in all (the fingerprint's count)
  size_t k;   // ranks
  size_t es;  // bytes per element
  size_t s;   // elements per shard
  size_t r;   // this rank
  static Layout of(const Collective& t, int size, int rank) {
    const size_t n = t.fingerprint.count;
    const auto k = static_cast<size_t>(size);
    return {n, k, dataTypeSize(t.fingerprint.type), shardCount(n, k), static_cast<size_t>(rank)};
  }
};

class MpiTransport : public Transport {
 public:
  MpiTransport(MPI_Comm comm, std::string name, int rank, int size)
      : comm_(comm), name_(std::move(name)), rank_(rank), size_(size) {}

  ~MpiTransport() override {
    if (!finalizing()) {
      MpiLock lock;
      MPI_Comm_free(&comm_);  // pending operations (after a timeout) complete first, in MPI
    }
  }

  void validate(const QueuedCommunicator& comm, const Collective& c) const override;
  void execute(QueuedCommunicator& comm, const Collective& c) override;
  std::shared_ptr<Communicator> split(QueuedCommunicator& comm, const SplitRequest& r) override;

 private:
  void arrive(QueuedCommunicator& comm, const Collective& t);
  // Starts a non-blocking collective (under the MPI lock) and polls it until done or the timeout.
  void transfer(QueuedCommunicator& comm, const Collective& t, Clock::time_point deadline,
                const std::function<int(MPI_Request*)>& start);
  void allReduce(QueuedCommunicator& comm, const Collective& t, Clock::time_point deadline);
  void reduceScatter(QueuedCommunicator& comm, const Collective& t, Clock::time_point deadline);
  void allGather(QueuedCommunicator& comm, const Collective& t, Clock::time_point deadline);
  void broadcast(QueuedCommunicator& comm, const Collective& t, Clock::time_point deadline);

  MPI_Comm comm_;
  const std::string name_;
  const int rank_;
  const int size_;
  Agreements agreements_;  // the arrival phases and the splits
};

// This process's communicator over `comm` (which it then owns).
std::shared_ptr<Communicator> makeCommunicator(MPI_Comm comm, std::string name,
                                               Milliseconds timeout) {
  int rank = 0;
  int size = 1;
  {
    MpiLock lock;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  return std::make_shared<QueuedCommunicator>(
      GroupInfo{kBackendName, name, rank, size, timeout, false},
      std::make_unique<MpiTransport>(comm, name, rank, size));
}

void MpiTransport::validate(const QueuedCommunicator&, const Collective& c) const {
  const Fingerprint& f = c.fingerprint;
  const auto k = static_cast<size_t>(size_);
  if (f.kind == OpKind::ReduceScatter && f.op != Op::Local &&
      c.output.count * k > static_cast<size_t>(INT_MAX)) {
    throw error(
        "reduceScatter on group '{}': the mpi backend handles at most {} elements (padded) in "
        "one reduce-scatter, not {}",
        name_, INT_MAX, c.output.count * k);
  }
  if (f.kind == OpKind::AllGather && shardCount(f.count, k) * k > static_cast<size_t>(INT_MAX)) {
    throw error(
        "allGather on group '{}': the mpi backend handles at most {} elements (padded) in one "
        "all-gather, not {}",
        name_, INT_MAX, shardCount(f.count, k) * k);
  }
}

void MpiTransport::execute(QueuedCommunicator& comm, const Collective& t) {
  if (finalizing()) {
    throw CommAbortedError("{} on group '{}': MPI was finalised", t.what, name_);
  }
  arrive(comm, t);
  // The data phase has its own timeout, from the end of the arrival.
  const auto deadline = Clock::now() + t.timeout;
  switch (t.fingerprint.kind) {
    case OpKind::Barrier: return;
    case OpKind::AllReduce: return allReduce(comm, t, deadline);
    case OpKind::ReduceScatter: return reduceScatter(comm, t, deadline);
    case OpKind::AllGather: return allGather(comm, t, deadline);
    case OpKind::Broadcast: return broadcast(comm, t, deadline);
  }
}

[[noreturn]] void failWith(QueuedCommunicator& comm, const Outcome& o) {
  switch (o.verdict) {
    case Verdict::Mismatch: comm.fail(FailureKind::Mismatch, o.message);
    case Verdict::Timeout: comm.fail(FailureKind::Timeout, o.message);
    default: comm.fail(FailureKind::Aborted, o.message);
  }
}

// The arrival phase: rank 0 leads; it compares the fingerprints.
void MpiTransport::arrive(QueuedCommunicator& comm, const Collective& t) {
  if (size_ == 1) return;
  AgreementSpec spec;
  spec.comm = comm_;
  spec.tags = kArrivalTags;
  spec.self = rank_;
  spec.leader = 0;
  for (int p = 1; p < size_; ++p) spec.members.push_back(p);
  spec.mine = Proposal{t.fingerprint.seq, pack(t.fingerprint)};
  spec.timeout = t.timeout;
  spec.what = t.what;
  spec.group = name_;
  spec.size = size_;
  spec.compare = [&](const std::vector<Proposal>& all) {
    std::vector<Fingerprint> fps;
    for (const auto& p : all) fps.push_back(unpack(p.words));
    return comm.disagreement(
        [&](int p) -> const Fingerprint& { return fps[static_cast<size_t>(p)]; });
  };
  const Outcome o = agreements_.agree(spec);
  if (o.verdict != Verdict::Go) failWith(comm, o);
}

void MpiTransport::transfer(QueuedCommunicator& comm, const Collective& t,
                            Clock::time_point deadline,
                            const std::function<int(MPI_Request*)>& start) {
  MPI_Request req = MPI_REQUEST_NULL;
  {
    MpiLock lock;
    check(start(&req), format("{} on group '{}'", t.what, name_));
  }
  if (pollUntil(req, deadline, true)) return;
  const std::string msg = format(
      "{} in group '{}' (size {}) timed out after {} ms while transferring data (every rank had "
      "arrived; a peer may be stuck or dead). MPI cannot cancel the pending collective: end this "
      "process (MPI_Finalize is skipped at exit, and the launcher ends the job)",
      t.what, name_, size_, t.timeout.count());
  markPoisoned(msg);
  comm.fail(FailureKind::Timeout, msg);
}

void MpiTransport::allReduce(QueuedCommunicator& comm, const Collective& t,
                             Clock::time_point deadline) {
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
    const void* s =
        send == MPI_IN_PLACE ? MPI_IN_PLACE : static_cast<const char*>(send) + begin * wes;
    void* r = bytePtr(wire, begin * wes);
    transfer(comm, t, deadline, [&](MPI_Request* req) {
      return MPI_Iallreduce(s, r, toInt(len), plan.mpiType, plan.mpiOp, comm_, req);
    });
  }
  if (needsFinish(plan)) finish(plan, wire, t.output.data, n, size_);
}

void MpiTransport::reduceScatter(QueuedCommunicator& comm, const Collective& t,
                                 Clock::time_point deadline) {
  const Fingerprint& f = t.fingerprint;
  const auto [n, k, es, s, r] = Layout::of(t, size_, rank_);
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
    transfer(comm, t, deadline, [&](MPI_Request* req) {
      return MPI_Ireduce_scatter_block(send, recv, toInt(s), plan.mpiType, plan.mpiOp, comm_, req);
    });
    if (needsFinish(plan)) finish(plan, recv, t.output.data, s, size_);
  }
  if (s > valid) std::memset(bytePtr(t.output.data, valid * es), 0, (s - valid) * es);
}

void MpiTransport::allGather(QueuedCommunicator& comm, const Collective& t,
                             Clock::time_point deadline) {
  const auto [n, k, es, s, r] = Layout::of(t, size_, rank_);
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
  transfer(comm, t, deadline, [&](MPI_Request* req) {
    return MPI_Iallgather(send, toInt(s), type, recv, toInt(s), type, comm_, req);
  });
  if (recv != t.output.data) std::memcpy(t.output.data, recv, n * es);
}

void MpiTransport::broadcast(QueuedCommunicator& comm, const Collective& t,
                             Clock::time_point deadline) {
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
    transfer(comm, t, deadline,
             [&](MPI_Request* req) { return MPI_Ibcast(p, toInt(len), type, f.root, comm_, req); });
  }
}

// ---- split

std::shared_ptr<Communicator> MpiTransport::split(QueuedCommunicator& comm, const SplitRequest& r) {
  const std::vector<int>& ranks = r.ranks;
  const std::string& what = r.what;
  const uint64_t id = hashString(r.identity);
  if (ranks.size() > 1) {
    // The first member leads; a mismatch is a member that called another split.
    AgreementSpec spec;
    spec.comm = comm_;
    spec.tags = kSplitTags;
    spec.self = rank_;
    spec.leader = ranks[0];
    spec.members.assign(ranks.begin() + 1, ranks.end());
    spec.mine = Proposal{id, {}};
    spec.timeout = comm.timeout();
    spec.what = what;
    spec.group = name_;
    spec.size = size_;
    spec.compare = [&](const std::vector<Proposal>& all) -> std::optional<std::string> {
      for (size_t i = 1; i < all.size(); ++i) {
        if (all[i].id != id) {
          return format(
              "{}: rank {} called a different split (split calls must match on every member, in "
              "the same order)",
              what, ranks[i]);
        }
      }
      return std::nullopt;
    };
    const Outcome o = agreements_.agree(spec);
    if (o.verdict == Verdict::Mismatch) throw CommMismatchError(o.message);
    if (o.verdict != Verdict::Go) throw CommTimeoutError(o.message);
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
  return makeCommunicator(child, r.childName, comm.timeout());
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
  return makeCommunicator(comm, config.name, timeout);
}

}  // namespace xtrain::comm::mpi
