#include "replication/replica_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "comm/communicator.hpp"
#include "comm/reduce.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::replication {

namespace {

comm::BufferView viewOf(void* data, size_t count, DataType type) {
  return comm::BufferView{data, count, type};
}

comm::BufferView viewOf(HostTensor& t) {
  return viewOf(t.raw(), static_cast<size_t>(t.nelms()), t.dataType());
}

comm::BufferView viewOf(std::vector<float>& v) {
  return viewOf(v.data(), v.size(), DataType::FLOAT);
}

template <typename Options>
Options named(std::string debugName) {
  Options o;
  o.debugName = std::move(debugName);
  return o;
}

template <typename Options>
Options rooted(int root, std::string debugName) {
  Options o = named<Options>(std::move(debugName));
  o.root = root;
  return o;
}

void scale(float* x, int64_t begin, int64_t end, float factor) {
  if (factor == 1.0f) return;
  for (int64_t i = begin; i < end; ++i) x[i] *= factor;
}

// The sum of the same elements of several replicas' FLOAT buffers x[0], x[1], ... (in that order,
// per element) by the shared reduction kernel (comm/reduce.hpp), which adds in the same order as a
// scalar loop would: the same bits.
class ReplicaSum {
 public:
  explicit ReplicaSum(size_t replicas) : x_(replicas), from_(replicas), to_(replicas) {}

  // The buffers of the replicas, x[0] first.
  std::vector<float*>& buffers() { return x_; }
  // Elements [begin, end) of the sum written to the first `dsts` buffers (x[0] among them: a
  // destination may be a source).
  void into(size_t dsts, int64_t begin, int64_t end) {
    for (size_t r = 0; r < x_.size(); ++r) from_[r] = x_[r] + begin;
    for (size_t r = 0; r < dsts; ++r) to_[r] = x_[r] + begin;
    comm::reduceInto(DataType::FLOAT, CollectiveOperator::Add, from_.data(), x_.size(), to_.data(),
                     dsts, static_cast<size_t>(end - begin));
  }

  // Elements [begin, end) of every buffer become the sum scaled by `factor`: reducePlain's
  // one-instance pass. Without a scale the kernel writes the sum to every replica at once; with
  // one, a block at a time (sum into x[0], scale, copy back), so the copies read it from the cache.
  void scaledIntoAll(int64_t begin, int64_t end, float factor) {
    if (factor == 1.0f) {
      into(x_.size(), begin, end);
      return;
    }
    constexpr int64_t kBlock = 2048;
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t e = std::min(end, b + kBlock);
      into(1, b, e);
      scale(x_[0], b, e, factor);
      for (size_t r = 1; r < x_.size(); ++r) {
        std::memcpy(x_[r] + b, x_[0] + b, static_cast<size_t>(e - b) * sizeof(float));
      }
    }
  }

 private:
  std::vector<float*> x_;
  std::vector<const void*> from_;
  std::vector<void*> to_;
};

}  // namespace

ReplicaExchange::ReplicaExchange(ReplicaLayout layout,
                                 std::shared_ptr<comm::Communicator> instances,
                                 LocalReplicas& replicas, GradientPlan plan, size_t bucketBytes)
    : layout_(layout),
      instances_(std::move(instances)),
      replicas_(replicas),
      plan_(std::move(plan)) {
  for (int64_t r = 1; r < layout_.local; ++r) others_.push_back(r);
  if (!instances_) return;
  // Buckets in the order the backward pass produces the gradients: the last weights first.
  std::vector<GradientReducer::Tensor> tensors;
  for (auto it = plan_.plain.rbegin(); it != plan_.plain.rend(); ++it) {
    tensors.push_back({*it, static_cast<size_t>(buffer(0, *it).nelms())});
  }
  reducer_ = std::make_unique<GradientReducer>(instances_, std::move(tensors), bucketBytes);
  moveGradientsToSharedMemory();
}

// Replica 0's plain gradients (which the reducer all-reduces) move to their homes in the memory
// the instances share, when there is such memory: the all-reduce then reads and writes them in
// place. Their values move along; the session finds them there through buffer().
void ReplicaExchange::moveGradientsToSharedMemory() {
  const auto& memory = reducer_->sharedMemory();
  if (!memory) return;
  const std::shared_ptr<void> owner = std::const_pointer_cast<comm::SharedMemory>(memory);
  size_t moved = 0;
  size_t bytes = 0;
  for (const TensorId& id : plan_.plain) {
    float* home = reducer_->sharedBuffer(id);
    if (home == nullptr) continue;
    HostTensor& gradient = buffer(0, id);
    std::memcpy(home, gradient.raw(), gradient.nbytes());
    gradient = HostTensor::view(gradient.info(), reinterpret_cast<std::byte*>(home), owner);
    ++moved;
    bytes += gradient.nbytes();
  }
  logging::replication::debug(
      "gradients across instances: {} of {} in memory the instances share ({} bytes), reduced "
      "in place",
      moved, plan_.plain.size(), bytes);
}

float ReplicaExchange::meanScale(int64_t replicas) const {
  return plan_.mean ? 1.0f / static_cast<float>(replicas) : 1.0f;
}

void ReplicaExchange::addReplicas(const TensorId& id, int64_t to, const std::vector<int64_t>& from,
                                  int64_t begin, int64_t end) {
  if (from.empty()) return;
  ReplicaSum sum(from.size() + 1);
  sum.buffers()[0] = floats(to, id);
  for (size_t k = 0; k < from.size(); ++k) sum.buffers()[k + 1] = floats(from[k], id);
  sum.into(1, begin, end);
}

void ReplicaExchange::copyReplicas(const TensorId& id, int64_t from, const std::vector<int64_t>& to,
                                   int64_t begin, int64_t end) {
  const HostTensor& source = buffer(from, id);
  const size_t element = dataTypeSize(source.dataType());
  const auto* bytes = static_cast<const std::byte*>(source.raw());
  for (int64_t r : to) {
    std::memcpy(static_cast<std::byte*>(buffer(r, id).raw()) + static_cast<size_t>(begin) * element,
                bytes + static_cast<size_t>(begin) * element,
                static_cast<size_t>(end - begin) * element);
  }
}

void ReplicaExchange::gradientReady(const TensorId& reduced) {
  reducer_->ready(reduced, [&](const TensorId& t) { return floats(0, t); });
}

void ReplicaExchange::reduceGradients() {
  lastReduction_ = {};
  if (layout_.global == 1) return;
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  auto start = Clock::now();
  for (const auto& g : plan_.grouped) reduceGrouped(g);
  lastReduction_.grouped = since(start);
  start = Clock::now();
  for (const auto& g : plan_.sharded) reduceSharded(g);
  lastReduction_.sharded = since(start);
  start = Clock::now();
  reducePlain();
  lastReduction_.plain = since(start);
}

// Each local replica's thread takes one slice of every tensor (disjoint writes): the local sum goes
// into replica 0's buffer, then (on this thread) across the instances, then each thread scales its
// slice for the mean and copies it back to the other local replicas.
void ReplicaExchange::reducePlain() {
  const int64_t L = layout_.local;
  auto sliceOf = [L](int64_t n, int64_t r) {
    return std::pair<int64_t, int64_t>{n * r / L, n * (r + 1) / L};
  };
  const float factor = meanScale(layout_.global);
  if (L > 1 && !reducer_) {
    // One instance: sum, scale and copy back in one pass over each thread's slice (2L passes over
    // memory instead of 2L + 1, and no second sweep).
    replicas_.forEach([&](int64_t t) {
      ReplicaSum sum(static_cast<size_t>(L));
      for (const TensorId& id : plan_.plain) {
        for (int64_t r = 0; r < L; ++r) sum.buffers()[static_cast<size_t>(r)] = floats(r, id);
        const auto [begin, end] = sliceOf(buffer(0, id).nelms(), t);
        sum.scaledIntoAll(begin, end, factor);
      }
    });
    return;
  }
  if (L > 1) {
    replicas_.forEach([&](int64_t t) {
      for (const TensorId& id : plan_.plain) {
        const auto [begin, end] = sliceOf(buffer(0, id).nelms(), t);
        addReplicas(id, 0, others_, begin, end);
      }
    });
  }
  if (reducer_) reducer_->allReduceSum([&](const TensorId& id) { return floats(0, id); });
  if (factor == 1.0f && L == 1) return;
  replicas_.forEach([&](int64_t t) {
    for (const TensorId& id : plan_.plain) {
      const auto [begin, end] = sliceOf(buffer(0, id).nelms(), t);
      scale(floats(0, id), begin, end, factor);
      copyReplicas(id, 0, others_, begin, end);
    }
  });
}

void ReplicaExchange::reduceGrouped(const GroupedGradient& g) {
  const GroupedVariable& v = g.variable;
  const int64_t n = buffer(0, g.reduced).nelms();
  const auto groups = static_cast<size_t>(v.groups());
  // The local members of each group, ascending; the first holds the group's sum.
  std::vector<std::vector<int64_t>> members(groups);
  for (int64_t r = 0; r < layout_.local; ++r) {
    members[static_cast<size_t>(v.grouping.getGroupAt(layout_.globalIndex(r)))].push_back(r);
  }
  for (auto& m : members) {
    if (m.size() > 1)
      addReplicas(g.reduced, m[0], std::vector<int64_t>(m.begin() + 1, m.end()), 0, n);
  }
  // Groups spanning instances: every instance adds its partial sums into one [groups] x n buffer
  // (zeros for groups it holds no member of) and the sum across the instances completes every
  // group. The cost is groups x n per instance, whatever the instance holds.
  if (instances_ && v.spansInstances) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    std::vector<float> staging(groups * static_cast<size_t>(n), 0.0f);
    for (size_t k = 0; k < groups; ++k) {
      if (!members[k].empty()) {
        std::memcpy(staging.data() + k * static_cast<size_t>(n), floats(members[k][0], g.reduced),
                    bytes);
      }
    }
    instances_->allReduceSync(viewOf(staging),
                              named<comm::AllReduceOptions>("groupedGradients/" + g.weight));
    for (size_t k = 0; k < groups; ++k) {
      if (!members[k].empty()) {
        std::memcpy(floats(members[k][0], g.reduced), staging.data() + k * static_cast<size_t>(n),
                    bytes);
      }
    }
  }
  const float factor = meanScale(v.grouping.getGroupSize());
  for (const auto& m : members) {
    if (m.empty()) continue;
    scale(floats(m[0], g.reduced), 0, n, factor);
    copyReplicas(g.reduced, m[0], std::vector<int64_t>(m.begin() + 1, m.end()), 0, n);
  }
}

void ReplicaExchange::reduceSharded(const ShardedGradient& g) {
  const int64_t L = layout_.local;
  const ShardPlan& p = g.plan;
  const int64_t n = p.elements;
  const int64_t s = p.shard;
  addReplicas(g.reduced, 0, others_, 0, n);  // the local replicas' sum, in replica 0's buffer
  float* sum = floats(0, g.reduced);
  const std::string debugName = "shardedGradients/" + g.weight;
  if (instances_ && p.shardCount() == layout_.global) {
    // Domain All: a replica's shard index is its global index, so an instance's replicas hold
    // consecutive shards, and a reduce-scatter across the instances gives each instance exactly
    // its replicas' shards of the sum.
    if (L == 1) {
      // Straight from the sum into the replica's shard (the collective pads past n): no copies.
      instances_->reduceScatterSync(
          viewOf(sum, static_cast<size_t>(n), DataType::FLOAT),
          viewOf(floats(0, g.gradShard), static_cast<size_t>(s), DataType::FLOAT),
          named<comm::ReduceScatterOptions>(debugName));
    } else {
      reduceScatterLocalShards(g, sum, debugName);
    }
  } else {
    // Other domains: the shards of one instance need not be consecutive; the whole sum is
    // all-reduced across the instances and each replica cuts its shard from it.
    if (instances_) {
      instances_->allReduceSync(viewOf(sum, static_cast<size_t>(n), DataType::FLOAT),
                                named<comm::AllReduceOptions>(debugName));
    }
    for (int64_t r = 0; r < L; ++r) {
      copyShardOut(sum, n, s, p.shardOf(layout_.globalIndex(r)), floats(r, g.gradShard));
    }
  }
  const float factor = meanScale(layout_.global);
  for (int64_t r = 0; r < L; ++r) {
    scale(floats(r, g.gradShard), 0, s, factor);
    HostTensor& weight = buffer(r, g.weight);
    copyShardOut(weight.raw(), n, s, p.shardOf(layout_.globalIndex(r)),
                 buffer(r, g.weightShard).raw(), dataTypeSize(weight.dataType()));
    // The update reads the accumulator's shard only, so it cannot zero the accumulator.
    if (!g.accumulator.empty()) buffer(r, g.accumulator).fillZero();
  }
}

void ReplicaExchange::reduceScatterLocalShards(const ShardedGradient& g, float* sum,
                                               const std::string& debugName) {
  const int64_t L = layout_.local;
  const int64_t s = g.plan.shard;
  std::vector<float> padded(static_cast<size_t>(layout_.global * s), 0.0f);
  std::memcpy(padded.data(), sum, static_cast<size_t>(g.plan.elements) * sizeof(float));
  std::vector<float> mine(static_cast<size_t>(L * s));
  instances_->reduceScatterSync(viewOf(padded), viewOf(mine),
                                named<comm::ReduceScatterOptions>(debugName));
  for (int64_t r = 0; r < L; ++r) {
    std::memcpy(floats(r, g.gradShard), mine.data() + r * s,
                static_cast<size_t>(s) * sizeof(float));
  }
}

void ReplicaExchange::gatherShardedWeights() {
  for (const auto& g : plan_.sharded) {
    HostTensor& first = buffer(0, g.weight);
    gatherShards(g.plan, g.weightShard, first.raw());
    copyReplicas(g.weight, 0, others_, 0, first.nelms());
  }
}

void ReplicaExchange::gatherShards(const ShardPlan& plan, const TensorId& shardId, void* whole) {
  const int64_t L = layout_.local;
  const DataType type = buffer(0, shardId).dataType();
  const size_t element = dataTypeSize(type);
  const size_t bytes = static_cast<size_t>(plan.shard) * element;
  auto view = [&](std::vector<std::byte>& v) { return viewOf(v.data(), v.size() / element, type); };
  const std::string debugName = "shardedGather/" + shardId;
  if (instances_ && plan.shardCount() == layout_.global) {
    // Domain All: the instances' shards are consecutive, an all-gather assembles them; with one
    // local replica straight from its shard into `whole` (the collective drops the padding).
    if (L == 1) {
      instances_->allGatherSync(
          viewOf(buffer(0, shardId).raw(), static_cast<size_t>(plan.shard), type),
          viewOf(whole, static_cast<size_t>(plan.elements), type),
          named<comm::AllGatherOptions>(debugName));
      return;
    }
    std::vector<std::byte> mine(static_cast<size_t>(L) * bytes);
    for (int64_t r = 0; r < L; ++r) {
      std::memcpy(mine.data() + static_cast<size_t>(r) * bytes, buffer(r, shardId).raw(), bytes);
    }
    std::vector<std::byte> all(static_cast<size_t>(layout_.global) * bytes);
    instances_->allGatherSync(view(mine), view(all), named<comm::AllGatherOptions>(debugName));
    std::memcpy(whole, all.data(), static_cast<size_t>(plan.elements) * element);
    return;
  }
  // Other domains: every group of the domain holds the same shards, so the first group's members
  // give the whole tensor; members on other instances arrive by a sum across the instances, to
  // which each instance contributes zeros for the shards it does not hold (x + 0 is exact, FLOAT16
  // included).
  std::vector<std::byte> staging(static_cast<size_t>(plan.shardCount()) * bytes, std::byte{0});
  for (int64_t i = 0; i < plan.shardCount(); ++i) {
    const int64_t local = layout_.localIndex(plan.domain.getReplicaAt(0, i));
    if (local >= 0) {
      std::memcpy(staging.data() + static_cast<size_t>(i) * bytes, buffer(local, shardId).raw(),
                  bytes);
    }
  }
  if (instances_) {
    instances_->allReduceSync(view(staging), named<comm::AllReduceOptions>(debugName));
  }
  std::memcpy(whole, staging.data(), static_cast<size_t>(plan.elements) * element);
}

void ReplicaExchange::groupedToHost(const TensorId& id, const GroupedVariable& v,
                                    HostTensor& hostView) {
  // Each group is filled by the instance holding its lowest replica. With several instances the
  // others contribute zeros, so a sum across the instances assembles the whole view on every one.
  if (instances_) std::memset(hostView.raw(), 0, hostView.nbytes());
  for (int64_t g = 0; g < v.groups(); ++g) {
    const int64_t local = layout_.localIndex(v.grouping.getReplicaAt(g, 0));
    if (local < 0) continue;
    const HostTensor& b = buffer(local, id);
    std::memcpy(groupBytes(hostView, g), b.raw(), b.nbytes());
  }
  if (instances_) {
    instances_->allReduceSync(viewOf(hostView),
                              named<comm::AllReduceOptions>("weightsToHost/" + id));
  }
}

void ReplicaExchange::broadcastPlain(const TensorId& id, int rootRank) {
  HostTensor& first = buffer(0, id);
  if (instances_) {
    instances_->broadcastSync(viewOf(first),
                              rooted<comm::BroadcastOptions>(rootRank, "broadcastWeights/" + id));
  }
  copyReplicas(id, 0, others_, 0, first.nelms());
}

void ReplicaExchange::broadcastSharded(const TensorId& id, const ShardPlan& plan, int rootRank) {
  // Whole on every instance, the root's sent to all, cut into this instance's shards.
  const DataType type = buffer(0, id).dataType();
  HostTensor whole(TensorInfo(type, {plan.elements}));
  gatherShards(plan, id, whole.raw());
  if (instances_) {
    instances_->broadcastSync(viewOf(whole),
                              rooted<comm::BroadcastOptions>(rootRank, "broadcastWeights/" + id));
  }
  for (int64_t r = 0; r < layout_.local; ++r) {
    copyShardOut(whole.raw(), plan.elements, plan.shard, plan.shardOf(layout_.globalIndex(r)),
                 buffer(r, id).raw(), dataTypeSize(type));
  }
}

void ReplicaExchange::broadcastGrouped(const TensorId& id, const GroupedVariable& v, int rootRank) {
  // The root instance sends the groups it holds a member of; every replica of such a group takes
  // that value. Groups the root holds no member of keep their own values.
  auto rootHolds = [&](int64_t g) {
    const auto members = v.grouping.getReplicasAt(g);
    return std::any_of(members.begin(), members.end(),
                       [&](int64_t r) { return layout_.instanceOf(r) == rootRank; });
  };
  HostTensor view(TensorInfo(buffer(0, id).dataType(), v.hostShape()));
  const int myRank = instances_ ? instances_->rank() : 0;
  if (myRank == rootRank) {
    for (int64_t g = 0; g < v.groups(); ++g) {
      for (int64_t r : v.grouping.getReplicasAt(g)) {
        const int64_t local = layout_.localIndex(r);
        if (local < 0) continue;
        std::memcpy(groupBytes(view, g), buffer(local, id).raw(), buffer(local, id).nbytes());
        break;
      }
    }
  }
  if (instances_) {
    instances_->broadcastSync(viewOf(view),
                              rooted<comm::BroadcastOptions>(rootRank, "broadcastWeights/" + id));
  }
  for (int64_t r = 0; r < layout_.local; ++r) {
    const int64_t g = v.grouping.getGroupAt(layout_.globalIndex(r));
    if (!rootHolds(g)) continue;
    HostTensor& b = buffer(r, id);
    std::memcpy(b.raw(), groupBytes(view, g), b.nbytes());
  }
}

std::vector<double> ReplicaExchange::sumOverShards(
    const std::vector<const ShardPlan*>& plans, size_t width,
    const std::function<void(size_t item, int64_t local, double* out)>& partial) {
  // Every group of a domain holds the same shards, so the first group's members give every shard
  // once; an instance contributes the shards its replicas hold there and zeros for the others.
  std::vector<size_t> offset(plans.size() + 1, 0);
  for (size_t k = 0; k < plans.size(); ++k) {
    offset[k + 1] = offset[k] + static_cast<size_t>(plans[k]->shardCount()) * width;
  }
  // FLOAT across the instances (the collectives have no DOUBLE); each partial is a double sum.
  std::vector<float> staging(offset.back(), 0.0f);
  std::vector<double> values(width);
  for (size_t k = 0; k < plans.size(); ++k) {
    for (int64_t i = 0; i < plans[k]->shardCount(); ++i) {
      const int64_t local = layout_.localIndex(plans[k]->domain.getReplicaAt(0, i));
      if (local < 0) continue;
      partial(k, local, values.data());
      for (size_t j = 0; j < width; ++j) {
        staging[offset[k] + static_cast<size_t>(i) * width + j] = static_cast<float>(values[j]);
      }
    }
  }
  if (instances_ && !staging.empty()) {
    instances_->allReduceSync(viewOf(staging), named<comm::AllReduceOptions>("shardNorms"));
  }
  std::vector<double> sums(plans.size() * width, 0.0);
  for (size_t k = 0; k < plans.size(); ++k) {
    for (size_t j = offset[k]; j < offset[k + 1]; ++j) {
      sums[k * width + (j - offset[k]) % width] += staging[j];
    }
  }
  return sums;
}

bool ReplicaExchange::trueOnAllInstances(bool value, const char* what) {
  if (!instances_) return value;
  float notTrue = value ? 0.0f : 1.0f;
  instances_->allReduceSync(viewOf(&notTrue, 1, DataType::FLOAT),
                            named<comm::AllReduceOptions>(what));
  return notTrue == 0.0f;
}

void ReplicaExchange::sumOnAllInstances(std::vector<float>& values, const char* what) {
  if (!instances_ || values.empty()) return;
  instances_->allReduceSync(viewOf(values), named<comm::AllReduceOptions>(what));
}

}  // namespace xtrain::replication
