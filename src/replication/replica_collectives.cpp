#include "replication/replica_collectives.hpp"

#include <algorithm>
#include <cstring>

#include "comm/communicator.hpp"
#include "comm/reduce.hpp"
#include "common/check.hpp"
#include "replication/grouped_variable.hpp"

namespace xtrain::replication {

namespace {

enum Kind { kAllReduce = 0, kReduceScatter = 1, kAllGather = 2 };

const char* kindName(int kind) {
  switch (kind) {
    case kAllReduce: return "all-reduce";
    case kReduceScatter: return "reduce-scatter";
    case kAllGather: return "all-gather";
  }
  return "?";
}

using Failure = comm::RendezvousFailure::Kind;

std::string replicaList(const std::vector<int64_t>& replicas) {
  std::string out;
  for (int64_t r : replicas) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

class ReplicaCollectives::Inputs {
 public:
  Inputs(const ReplicaCollectives& c, size_t bytes) : c_(c), bytes_(bytes) {}
  // The input of a global replica: from the exchange, or a local replica's own buffer.
  const std::byte* of(int64_t globalReplica) const {
    if (c_.exchanged_) return c_.gathered_.data() + static_cast<size_t>(globalReplica) * bytes_;
    const int64_t local = globalReplica - c_.replicaOffset_;
    XT_CHECK(local >= 0 && local < c_.localReplicas_, "replica {} is not local", globalReplica);
    return c_.rendezvous_.slot(static_cast<int>(local)).input;
  }

 private:
  const ReplicaCollectives& c_;
  size_t bytes_;
};

std::string ReplicaCollectives::Signature::str() const {
  std::string s = format("{} '{}' of {} {} elements, groups of {} (stride {})", kindName(kind),
                         what, count, dataTypeName(type), groupSize, stride);
  if (kind != kAllGather) s += format(", operator {}", toString(op));
  return s;
}

ReplicaCollectives::ReplicaCollectives(std::shared_ptr<comm::Communicator> instances,
                                       int64_t localReplicas, int64_t replicaOffset,
                                       int64_t globalReplicas,
                                       std::optional<std::chrono::milliseconds> timeout)
    : instances_(std::move(instances)),
      localReplicas_(localReplicas),
      replicaOffset_(replicaOffset),
      globalReplicas_(globalReplicas),
      timeout_(timeout      ? *timeout
               : instances_ ? instances_->timeout()
                            : comm::defaultTimeout()),
      rendezvous_(static_cast<int>(localReplicas)) {
  XT_CHECK(localReplicas >= 1 && globalReplicas % localReplicas == 0, "{} local of {} replicas",
           localReplicas, globalReplicas);
  XT_CHECK(instances_ || globalReplicas == localReplicas,
           "{} replicas in other instances but no communicator", globalReplicas - localReplicas);
  XT_CHECK(!instances_ || instances_->size() * localReplicas == globalReplicas,
           "{} instances of {} replicas for {} replicas", instances_ ? instances_->size() : 0,
           localReplicas, globalReplicas);
}

ReplicaCollectives::~ReplicaCollectives() = default;

void ReplicaCollectives::enter(int64_t, bool concurrent) {
  std::lock_guard lock(mu_);
  ++active_;
  ++entered_;
  concurrent_ = concurrent;
}

void ReplicaCollectives::leave(int64_t) {
  std::lock_guard lock(mu_);
  --active_;
  // Concurrent replicas all enter once per program run (the pool runs every one, even after a
  // failure); sequential ones may stop at the first failure, but never meet anyway.
  if (active_ == 0 && (entered_ >= localReplicas_ || !concurrent_)) {
    rendezvous_.reset();
    exchanged_ = false;
    entered_ = 0;
  }
}

void ReplicaCollectives::replicaFailed(int64_t localReplica) {
  rendezvous_.abort(
      Failure::Other,
      format("local replica {} (global replica {}) stopped with an error, so its group cannot "
             "complete this collective (that replica's error is the cause)",
             localReplica, replicaOffset_ + localReplica));
}

void ReplicaCollectives::raise(const std::string& what, const comm::RendezvousFailure& failure) {
  throw error("{}: {}", what, failure.message);
}

std::string ReplicaCollectives::missingReplicas(const std::vector<int>& missing) const {
  std::vector<int64_t> local, global;
  for (int r : missing) {
    local.push_back(r);
    global.push_back(replicaOffset_ + r);
  }
  return format("local replica{} {} (global {})", missing.size() == 1 ? "" : "s",
                replicaList(local), replicaList(global));
}

bool ReplicaCollectives::spansInstances(const ReplicaGrouping& grouping) const {
  return instances_ && replication::groupsSpanInstances(grouping, localReplicas_);
}

void ReplicaCollectives::exchange(const Signature& signature) {
  const size_t bytes = static_cast<size_t>(signature.count) * dataTypeSize(signature.type);
  send_.resize(bytes * static_cast<size_t>(localReplicas_));
  gathered_.resize(bytes * static_cast<size_t>(globalReplicas_));
  for (int64_t r = 0; r < localReplicas_; ++r) {
    if (bytes > 0)
      std::memcpy(send_.data() + bytes * static_cast<size_t>(r),
                  rendezvous_.slot(static_cast<int>(r)).input, bytes);
  }
  comm::AllGatherOptions o;
  o.debugName = signature.what;
  const auto n = static_cast<size_t>(signature.count);
  instances_->allGatherSync(
      comm::BufferView{send_.data(), n * static_cast<size_t>(localReplicas_), signature.type},
      comm::BufferView{gathered_.data(), n * static_cast<size_t>(globalReplicas_), signature.type},
      o);
}

comm::RendezvousWait ReplicaCollectives::arrival(const Signature& signature) {
  comm::RendezvousWait w;
  w.timeout = timeout_;
  w.twice = [](int r) { return format("local replica {} arrived twice in one round", r); };
  w.timedOut = [this](const std::vector<int>& missing) {
    return format(
        "{} did not reach this collective within {} ms. Every replica runs the same program, so "
        "a missing replica has stopped or is stuck elsewhere (XTRAIN_COMM_TIMEOUT sets the limit)",
        missingReplicas(missing), timeout_.count());
  };
  w.last = [this, &signature] {
    exchanged_ = false;
    if (!spansInstances(ReplicaGrouping(globalReplicas_, signature.stride, signature.groupSize))) {
      return;
    }
    try {
      exchange(signature);
    } catch (const std::exception& e) {
      rendezvous_.abort(Failure::Other,
                        format("the exchange with the other instances failed: {}", e.what()));
      throw;
    }
    exchanged_ = true;
  };
  return w;
}

comm::RendezvousWait ReplicaCollectives::departure() const {
  comm::RendezvousWait w;
  w.timeout = timeout_;
  w.twice = [](int r) { return format("local replica {} arrived twice in one round", r); };
  w.timedOut = [this](const std::vector<int>&) {
    return format("the local replicas did not all finish this collective within {} ms",
                  timeout_.count());
  };
  return w;
}

void ReplicaCollectives::meet(int64_t localReplica, const Signature& signature,
                              const HostTensor& input,
                              const std::function<void(const Inputs&)>& compute) {
  XT_CHECK(localReplica >= 0 && localReplica < localReplicas_, "local replica {} of {}",
           localReplica, localReplicas_);
  {
    std::lock_guard lock(mu_);
    if (localReplicas_ > 1 && !concurrent_) {
      throw error(
          "{}: the {} local replicas run one after another on one thread, so they cannot meet "
          "in a collective; run them on their own threads (ReplicaScope with concurrent true)",
          signature.what, localReplicas_);
    }
  }
  const auto mismatch = [](int r, const Slot& mine,
                           const Slot& first) -> std::optional<std::string> {
    if (mine.signature == first.signature) return std::nullopt;
    return format(
        "the local replicas issued different collectives: replica {} issued {}, another issued {}",
        r, mine.signature.str(), first.signature.str());
  };
  const int me = static_cast<int>(localReplica);
  if (auto failed =
          rendezvous_.arrive(me, Slot{signature, input.raw()}, arrival(signature), mismatch)) {
    raise(signature.what, *failed);
  }
  try {
    compute(Inputs(*this, static_cast<size_t>(signature.count) * dataTypeSize(signature.type)));
  } catch (const std::exception& e) {
    rendezvous_.abort(Failure::Other, format("local replica {} failed to compute its result: {}",
                                             localReplica, e.what()));
    throw;
  }
  // Every member has read this replica's input before it may change.
  if (auto failed = rendezvous_.wait(me, departure())) raise(signature.what, *failed);
}

void ReplicaCollectives::allReduce(int64_t localReplica, const HostTensor& input,
                                   HostTensor& output, const ReplicaGrouping& grouping,
                                   CollectiveOperator op, const std::string& what) {
  XT_CHECK(op != CollectiveOperator::Local && output.nelms() == input.nelms(), "{}", what);
  const Signature sig{kAllReduce,
                      input.dataType(),
                      input.nelms(),
                      grouping.getStride(),
                      grouping.getGroupSize(),
                      op,
                      what};
  const int64_t me = replicaOffset_ + localReplica;
  const auto start = std::chrono::steady_clock::now();
  meet(localReplica, sig, input, [&](const Inputs& in) {
    std::vector<const void*> srcs;
    for (int64_t m : grouping.getReplicasAt(grouping.getGroupAt(me))) srcs.push_back(in.of(m));
    void* dst = output.raw();
    comm::reduceInto(input.dataType(), op, srcs.data(), srcs.size(), &dst, 1,
                     static_cast<size_t>(input.nelms()));
  });
  record(localReplica, "all-reduce", input, grouping, what, start);
}

void ReplicaCollectives::reduceScatter(int64_t localReplica, const HostTensor& input,
                                       HostTensor& output, const ReplicaGrouping& grouping,
                                       CollectiveOperator op, const std::string& what) {
  const int64_t k = grouping.getGroupSize();
  const int64_t n = input.nelms();
  const int64_t s = (n + k - 1) / k;
  XT_CHECK(op != CollectiveOperator::Local && output.nelms() == s, "{}: {} elements over {}", what,
           n, k);
  const Signature sig{kReduceScatter, input.dataType(), n, grouping.getStride(), k, op, what};
  const int64_t me = replicaOffset_ + localReplica;
  const auto start = std::chrono::steady_clock::now();
  meet(localReplica, sig, input, [&](const Inputs& in) {
    const size_t esize = dataTypeSize(input.dataType());
    // Part i of the padded input: elements [i*s, i*s + count) exist, the rest is padding.
    const int64_t begin = grouping.getIndexInGroupAt(me) * s;
    const int64_t count = std::clamp<int64_t>(n - begin, 0, s);
    std::vector<const void*> srcs;
    for (int64_t m : grouping.getReplicasAt(grouping.getGroupAt(me))) {
      srcs.push_back(in.of(m) + static_cast<size_t>(begin) * esize);
    }
    void* dst = output.raw();
    if (count > 0) {
      comm::reduceInto(input.dataType(), op, srcs.data(), srcs.size(), &dst, 1,
                       static_cast<size_t>(count));
    }
    std::memset(output.raw() + static_cast<size_t>(count) * esize, 0,
                static_cast<size_t>(s - count) * esize);
  });
  record(localReplica, "reduce-scatter", input, grouping, what, start);
}

void ReplicaCollectives::allGather(int64_t localReplica, const HostTensor& input,
                                   HostTensor& output, const ReplicaGrouping& grouping,
                                   const std::string& what) {
  const int64_t k = grouping.getGroupSize();
  XT_CHECK(output.nelms() == k * input.nelms(), "{}", what);
  const Signature sig{kAllGather, input.dataType(),        input.nelms(), grouping.getStride(),
                      k,          CollectiveOperator::Add, what};
  const int64_t me = replicaOffset_ + localReplica;
  const auto start = std::chrono::steady_clock::now();
  meet(localReplica, sig, input, [&](const Inputs& in) {
    const size_t bytes = input.nbytes();
    const auto members = grouping.getReplicasAt(grouping.getGroupAt(me));
    for (size_t i = 0; i < members.size(); ++i) {
      if (bytes > 0) std::memcpy(output.raw() + i * bytes, in.of(members[i]), bytes);
    }
  });
  record(localReplica, "all-gather", input, grouping, what, start);
}

void ReplicaCollectives::record(int64_t localReplica, const char* operation,
                                const HostTensor& input, const ReplicaGrouping& grouping,
                                const std::string& what,
                                std::chrono::steady_clock::time_point start) {
  if (localReplica != 0 || !recorder_) return;
  // The op's type (the description's first word), so that a model's ops share a row.
  recorder_(CollectiveRecord{
      grouping.str(), grouping.getGroupSize(), operation, what.substr(0, what.find(' ')),
      static_cast<uint64_t>(input.nbytes()),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
}

}  // namespace xtrain::replication
