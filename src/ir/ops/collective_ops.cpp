// PopART's replicated collectives (ai.graphcore): ReplicatedAllReduce, ReplicatedReduceScatter and
// ReplicatedAllGather. Each replica's op meets the ops of the other replicas of its group at run
// time (src/device/kernels/collective_kernels.cpp); here are their attributes, shapes and
// gradients. docs/replicated-ops.md describes them for users.
//
// Canonical form (canonicalize fills defaults and checks values):
//  - `op` (AllReduce, ReduceScatter): the CollectiveOperator's integer value, default Add. Local
//    (no reduction) is refused: a collective that does not combine anything is an Identity.
//  - the group, in one of two forms: `commGroupType` (CommGroupType's value, default All) with
//    `commGroupSize` (default 0), or `replicaGroupingStride` with `replicaGroupingSize` (a
//    ReplicaGrouping without its replica count: it applies to the session's replicas). Neither:
//    CommGroup All. Both: an error.
//  - `groupSize` (set by canonicalize, never by users): the number of replicas k in a group when it
//    is known. It is known from the group alone except for CommGroup All, whose group is every
//    replica of the job: then it comes from Graph::replicationFactor(). Reduce-scatter and
//    all-gather need it for their output shape; the kernel checks it against the session's groups.
//
// Shapes: AllReduce keeps its input's; ReduceScatter flattens its input of n elements to 1-D
// [ceil(n/k)] (the input zero-padded to k*ceil(n/k), member i of the group keeping part i);
// AllGather flattens its input of s elements and returns 1-D [k*s] (the parts in group order).
#include <optional>

#include "ir/op_registry.hpp"
#include "xtrain/collectives.hpp"
#include "xtrain/replicagrouping.hpp"

namespace xtrain::ir {
namespace {

constexpr const char* kAllReduce = "ReplicatedAllReduce";
constexpr const char* kReduceScatter = "ReplicatedReduceScatter";
constexpr const char* kAllGather = "ReplicatedAllGather";

// The group attributes, in the order canonicalize checks them.
constexpr const char* kCommGroupType = "commGroupType";
constexpr const char* kCommGroupSize = "commGroupSize";
constexpr const char* kStride = "replicaGroupingStride";
constexpr const char* kSize = "replicaGroupingSize";
constexpr const char* kGroupSize = "groupSize";

// The group's size when it does not depend on the replica count, else nullopt (CommGroup All).
std::optional<int64_t> groupSizeOf(const Op& op) {
  if (op.attrs.has(kStride)) return op.attrs.getInt(kSize);
  const auto type = static_cast<CommGroupType>(op.attrs.getInt(kCommGroupType));
  switch (type) {
    case CommGroupType::All: return std::nullopt;
    case CommGroupType::Ungrouped: return 1;
    case CommGroupType::Consecutive:
    case CommGroupType::Orthogonal: return op.attrs.getInt(kCommGroupSize);
  }
  return std::nullopt;
}

// The replica groups over `replicas` replicas; throws naming the op when they do not divide them.
ReplicaGrouping groupingOver(const Op& op, int64_t replicas) {
  try {
    if (op.attrs.has(kStride)) {
      return ReplicaGrouping(replicas, op.attrs.getInt(kStride), op.attrs.getInt(kSize));
    }
    const CommGroup group(static_cast<CommGroupType>(op.attrs.getInt(kCommGroupType)),
                          static_cast<unsigned>(op.attrs.getInt(kCommGroupSize)));
    return ReplicaGrouping::fromCommGroup(group, replicas);
  } catch (const error& e) {
    throw error("{}: {}", op.describe(), e.what());
  }
}

void canonicalizeGroup(Op& op, const Graph& graph) {
  const bool commGroup = op.attrs.has(kCommGroupType) || op.attrs.has(kCommGroupSize);
  const bool grouping = op.attrs.has(kStride) || op.attrs.has(kSize);
  if (commGroup && grouping) {
    throw error(
        "{}: the group is given both as a CommGroup ({}, {}) and as a ReplicaGrouping ({}, {}); "
        "give one",
        op.describe(), kCommGroupType, kCommGroupSize, kStride, kSize);
  }
  if (grouping) {
    if (!op.attrs.has(kStride) || !op.attrs.has(kSize)) {
      throw error("{}: a ReplicaGrouping needs both {} and {}", op.describe(), kStride, kSize);
    }
    if (op.attrs.getInt(kStride) <= 0 || op.attrs.getInt(kSize) <= 0) {
      throw error("{}: the ReplicaGrouping's stride ({}) and group size ({}) must be positive",
                  op.describe(), op.attrs.getInt(kStride), op.attrs.getInt(kSize));
    }
  } else {
    const int64_t type = op.attrs.getInt(kCommGroupType, 0);
    if (type < 0 || type > static_cast<int64_t>(CommGroupType::Ungrouped)) {
      throw error(
          "{}: {} {} is not a CommGroupType (0 All, 1 Consecutive, 2 Orthogonal, 3 Ungrouped)",
          op.describe(), kCommGroupType, type);
    }
    const int64_t size = op.attrs.getInt(kCommGroupSize, 0);
    const auto t = static_cast<CommGroupType>(type);
    if ((t == CommGroupType::Consecutive || t == CommGroupType::Orthogonal) && size <= 0) {
      throw error("{}: CommGroup {} needs a positive {}, got {}", op.describe(), toString(t),
                  kCommGroupSize, size);
    }
    op.attrs.set(kCommGroupType, type);
    op.attrs.set(kCommGroupSize, size);
  }
  // With the replica count known, a group that does not divide it is reported at once (the
  // kernel would report it at the first run otherwise).
  op.attrs.erase(kGroupSize);
  if (graph.replicationFactor() > 0) {
    op.attrs.set(kGroupSize, groupingOver(op, graph.replicationFactor()).getGroupSize());
  } else if (const auto k = groupSizeOf(op)) {
    op.attrs.set(kGroupSize, *k);
  }
}

void canonicalizeOperator(Op& op) {
  const int64_t value = op.attrs.getInt("op", static_cast<int64_t>(CollectiveOperator::Add));
  if (value < 0 || value >= static_cast<int64_t>(allCollectiveOperators.size())) {
    throw error(
        "{}: op {} is not a CollectiveOperator (0 Add, 1 Mean, 2 Mul, 3 Min, 4 Max, 5 "
        "LogicalAnd, 6 LogicalOr, 7 SquareAdd)",
        op.describe(), value);
  }
  if (static_cast<CollectiveOperator>(value) == CollectiveOperator::Local) {
    throw error(
        "{}: operator Local does not reduce, so {} cannot use it (an Identity does what it would)",
        op.describe(), op.type);
  }
  op.attrs.set("op", value);
}

CollectiveOperator operatorOf(const Attributes& attrs) {
  return static_cast<CollectiveOperator>(attrs.getInt("op"));
}

const TensorInfo& checkedInput(const ShapeContext& ctx) {
  const TensorInfo& in = ctx.input(0);
  if (in.dataType() != DataType::FLOAT && in.dataType() != DataType::FLOAT16) {
    ctx.fail("the input {} must be FLOAT or FLOAT16", in.toString());
  }
  return in;
}

int64_t knownGroupSize(const ShapeContext& ctx) {
  if (!ctx.attrs().has(kGroupSize)) {
    ctx.fail(
        "its output shape depends on the number of replicas in its group, and for CommGroup All "
        "that is the replication factor, which the graph does not know "
        "(Graph::replicationFactor() is 0): import the model for a known number of replicas "
        "(the session's, or __replicationFactor from Builder::embedReplicationFactor) or give an "
        "explicit group (Consecutive, Orthogonal, Ungrouped or a ReplicaGrouping)");
  }
  return ctx.attrs().getInt(kGroupSize);
}

// The group attributes of `attrs`, for the collective a gradient emits over the same group.
Attributes groupAttrs(const Attributes& attrs) {
  Attributes out;
  for (const char* name : {kCommGroupType, kCommGroupSize, kStride, kSize}) {
    if (attrs.has(name)) out.set(name, attrs.getInt(name));
  }
  return out;
}

TensorId scaleBy(GradContext& g, const TensorId& x, double factor) {
  const DataType type = g.graph().tensor(x).info.dataType();
  return g.emit("Mul", {x, g.scalar(static_cast<float>(factor), type)}, {}, kOnnxDomain);
}

// y = all-reduce(x) on every member, so dL/dx_m = sum over the members r of dL/dy_r: the same
// all-reduce of the output gradients (Add), or the mean of them for Mean.
void allReduceGrad(GradContext& g) {
  if (!g.needsGrad(0)) return;
  const CollectiveOperator op = operatorOf(g.attrs());
  if (op != CollectiveOperator::Add && op != CollectiveOperator::Mean) {
    throw error("{}: operator {} has no gradient (only Add and Mean are differentiable)",
                g.op().describe(), toString(op));
  }
  Attributes a = groupAttrs(g.attrs());
  a.set("op", static_cast<int64_t>(op));
  g.setGradIn(0, g.emit(kAllReduce, {g.gradOut(0)}, std::move(a), kGraphcoreDomain));
}

// Member i holds elements [i*s, (i+1)*s) of the sum of the padded inputs, so dL/dx_m is the
// concatenation of every member's output gradient (an all-gather), cut to n elements.
void reduceScatterGrad(GradContext& g) {
  if (!g.needsGrad(0)) return;
  const CollectiveOperator op = operatorOf(g.attrs());
  if (op != CollectiveOperator::Add && op != CollectiveOperator::Mean) {
    throw error("{}: operator {} has no gradient (only Add and Mean are differentiable)",
                g.op().describe(), toString(op));
  }
  const TensorInfo& in = g.inputInfo(0);
  const int64_t k = g.attrs().getInt(kGroupSize);
  TensorId gx = g.emit(kAllGather, {g.gradOut(0)}, groupAttrs(g.attrs()), kGraphcoreDomain);
  if (op == CollectiveOperator::Mean) gx = scaleBy(g, gx, 1.0 / static_cast<double>(k));
  const int64_t gathered = g.graph().tensor(gx).info.nelms();
  if (gathered != in.nelms()) {
    Attributes a;
    a.set("starts", std::vector<int64_t>{0});
    a.set("ends", std::vector<int64_t>{in.nelms()});
    a.set("axes", std::vector<int64_t>{0});
    a.set("steps", std::vector<int64_t>{1});
    gx = g.emit("Slice", {gx}, std::move(a), kOnnxDomain);
  }
  g.setGradIn(0, g.reshapeTo(gx, in.shape()));
}

// Every member holds the concatenation of the inputs, so dL/dx_m is the sum over the members of
// their output gradients' part m: a reduce-scatter (Add) of the output gradients.
void allGatherGrad(GradContext& g) {
  if (!g.needsGrad(0)) return;
  Attributes a = groupAttrs(g.attrs());
  a.set("op", static_cast<int64_t>(CollectiveOperator::Add));
  const TensorId gx = g.emit(kReduceScatter, {g.gradOut(0)}, std::move(a), kGraphcoreDomain);
  g.setGradIn(0, g.reshapeTo(gx, g.inputInfo(0).shape()));
}

OpDef collective(const char* type) {
  OpDef d{.type = type, .domain = kGraphcoreDomain};
  return d;
}

XT_REGISTER_OP([] {
  OpDef d = collective(kAllReduce);
  d.canonicalize = [](Op& op, const Graph& graph) {
    canonicalizeOperator(op);
    canonicalizeGroup(op, graph);
  };
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{checkedInput(ctx)}; };
  d.grad = allReduceGrad;
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d = collective(kReduceScatter);
  d.canonicalize = [](Op& op, const Graph& graph) {
    canonicalizeOperator(op);
    canonicalizeGroup(op, graph);
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = checkedInput(ctx);
    const int64_t k = knownGroupSize(ctx);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), {(in.nelms() + k - 1) / k})};
  };
  d.grad = reduceScatterGrad;
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d = collective(kAllGather);
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.attrs.has("op")) {
      throw error("{}: an all-gather combines nothing, so it takes no 'op' attribute",
                  op.describe());
    }
    canonicalizeGroup(op, graph);
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = checkedInput(ctx);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), {knownGroupSize(ctx) * in.nelms()})};
  };
  d.grad = allGatherGrad;
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
