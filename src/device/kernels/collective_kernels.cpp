// Kernels of the replicated collectives (ai.graphcore ReplicatedAllReduce, ReplicatedReduceScatter,
// ReplicatedAllGather; attributes in src/ir/ops/collective_ops.cpp). A kernel only resolves its
// group over the session's replicas; the meeting of the replicas is the ReplicaCollectives of the
// replica the thread runs (device/replica_context.hpp).
#include <optional>

#include "device/kernel.hpp"
#include "device/replica_context.hpp"

namespace xtrain::device {
namespace {

enum class Kind { AllReduce, ReduceScatter, AllGather };

// The op's groups over `replicas` replicas: a ReplicaGrouping's (stride, size), else a CommGroup.
ReplicaGrouping groupingOf(const Attributes& a, int64_t replicas) {
  if (a.has("replicaGroupingStride")) {
    return ReplicaGrouping(replicas, a.getInt("replicaGroupingStride"),
                           a.getInt("replicaGroupingSize"));
  }
  const CommGroup group(static_cast<CommGroupType>(a.getInt("commGroupType", 0)),
                        static_cast<unsigned>(a.getInt("commGroupSize", 0)));
  return ReplicaGrouping::fromCommGroup(group, replicas);
}

class CollectiveKernel final : public Kernel {
 public:
  CollectiveKernel(const KernelSpec& spec, Kind kind)
      : kind_(kind),
        what_(spec.description),
        attrs_(spec.attrs),
        op_(kind == Kind::AllGather ? CollectiveOperator::Add
                                    : static_cast<CollectiveOperator>(spec.attrs.getInt("op", 0))) {
    const DataType type = spec.inputs.at(0).dataType();
    if (type != DataType::FLOAT && type != DataType::FLOAT16) {
      spec.fail("the input {} must be FLOAT or FLOAT16", spec.inputs[0].toString());
    }
    if (!spec.hasOutput(0) || spec.outputs[0].dataType() != type) {
      spec.fail("the output must have the input's type {}", dataTypeName(type));
    }
  }

  void run(const KernelIO& io) override {
    const ReplicaContext* context = currentReplica();
    if (context == nullptr) {
      throw error(
          "{}: no replica is running on this thread: replicated collectives run inside a "
          "session's replicas (Session::run)",
          what_);
    }
    ReplicaCollectives& c = *context->collectives;
    const ReplicaGrouping& grouping = groupingFor(c);
    switch (kind_) {
      case Kind::AllReduce:
        c.allReduce(context->localReplica, io.in(0), io.out(0), grouping, op_, what_);
        break;
      case Kind::ReduceScatter:
        c.reduceScatter(context->localReplica, io.in(0), io.out(0), grouping, op_, what_);
        break;
      case Kind::AllGather:
        c.allGather(context->localReplica, io.in(0), io.out(0), grouping, what_);
        break;
    }
  }

 private:
  // The groups only change with the session (its replica count): resolved once per session.
  const ReplicaGrouping& groupingFor(const ReplicaCollectives& c) {
    if (resolvedFor_ == &c && grouping_ && grouping_->getNumReplicas() == c.numReplicas()) {
      return *grouping_;
    }
    try {
      grouping_ = groupingOf(attrs_, c.numReplicas());
    } catch (const error& e) {
      throw error("{}: {}", what_, e.what());
    }
    // The IR inferred the output shape from this group size: a session with other groups would
    // read or write past the buffers.
    if (attrs_.has("groupSize") && attrs_.getInt("groupSize") != grouping_->getGroupSize()) {
      const int64_t built = attrs_.getInt("groupSize");
      grouping_.reset();
      throw error(
          "{}: the graph was built for groups of {} replicas, but over the session's {} replicas "
          "the group has {}: build the model for the session's replication factor",
          what_, built, c.numReplicas(), groupingOf(attrs_, c.numReplicas()).getGroupSize());
    }
    resolvedFor_ = &c;
    return *grouping_;
  }

  Kind kind_;
  std::string what_;
  Attributes attrs_;
  CollectiveOperator op_;
  const ReplicaCollectives* resolvedFor_ = nullptr;
  std::optional<ReplicaGrouping> grouping_;
};

KernelFactory factory(Kind kind) {
  return [kind](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    return std::make_unique<CollectiveKernel>(spec, kind);
  };
}

XT_REGISTER_KERNEL("ai.graphcore", "ReplicatedAllReduce", factory(Kind::AllReduce));
XT_REGISTER_KERNEL("ai.graphcore", "ReplicatedReduceScatter", factory(Kind::ReduceScatter));
XT_REGISTER_KERNEL("ai.graphcore", "ReplicatedAllGather", factory(Kind::AllGather));

}  // namespace
}  // namespace xtrain::device
