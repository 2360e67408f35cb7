// ONNX schemas for PopART's ai.graphcore opset 1 ops that the Builder emits, so that the ONNX
// checker validates their attributes and ONNX shape inference (Builder::getTensorShape) sees
// through them.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

#include "ir/graph.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::ir::onnxutil {

namespace {

constexpr int64_t kNoReduction = static_cast<int64_t>(ReductionType::NoReduction);
const std::vector<std::string> kFloatTypes = {"tensor(float)", "tensor(float16)", "tensor(double)"};

// Output 0 has input 0's element type; its shape is input `shapeInput`'s shape without reduction,
// else a scalar.
void lossInference(onnx::InferenceContext& ctx, size_t shapeInput) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const int64_t reduction = onnx::getAttribute(ctx, "reduction", 1);
  if (reduction == kNoReduction) {
    if (onnx::hasInputShape(ctx, shapeInput)) {
      onnx::propagateShapeFromInputToOutput(ctx, shapeInput, 0);
    }
  } else {
    ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();  // rank 0
  }
}

onnx::OpSchema lossSchema(const char* name) {
  onnx::OpSchema s;
  s.SetName(name)
      .SetDomain(kGraphcoreDomain)
      .SinceVersion(1)
      .SetLocation(__FILE__, __LINE__)
      .Attr("reduction", "ReductionType: 0 Sum, 1 Mean, 2 NoReduction", onnx::AttributeProto::INT,
            true);
  return s;
}

// The group size of a collective when its attributes give it (a ReplicaGrouping, Consecutive,
// Orthogonal, Ungrouped), else 0: CommGroup All spans every replica, which ONNX inference does not
// know (the IR does; see docs/replicated-ops.md).
int64_t collectiveGroupSize(onnx::InferenceContext& ctx) {
  if (ctx.getAttribute("replicaGroupingSize") != nullptr) {
    return onnx::getAttribute(ctx, "replicaGroupingSize", 0);
  }
  switch (onnx::getAttribute(ctx, "commGroupType", 0)) {
    case 1:
    case 2: return onnx::getAttribute(ctx, "commGroupSize", 0);
    case 3: return 1;
    default: return 0;
  }
}

// Output 0: 1-D, input 0's type, with `elements(n, k)` elements when the input's n and the group
// size k are known (else an unknown dimension).
template <typename F>
void collectiveInference(onnx::InferenceContext& ctx, F elements) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  auto* dim = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape()->add_dim();
  const int64_t k = collectiveGroupSize(ctx);
  if (k <= 0 || !onnx::hasInputShape(ctx, 0)) return;
  int64_t n = 1;
  for (const auto& d : onnx::getInputShape(ctx, 0).dim()) {
    if (!d.has_dim_value()) return;
    n *= d.dim_value();
  }
  dim->set_dim_value(elements(n, k));
}

onnx::OpSchema collectiveSchema(const char* name, bool reduces, const char* doc) {
  onnx::OpSchema s;
  s.SetName(name)
      .SetDomain(kGraphcoreDomain)
      .SinceVersion(1)
      .SetLocation(__FILE__, __LINE__)
      .SetDoc(doc)
      .Attr("commGroupType",
            "CommGroupType: 0 All (default), 1 Consecutive, 2 Orthogonal, 3 Ungrouped",
            onnx::AttributeProto::INT, false)
      .Attr("commGroupSize", "replicas per group for Consecutive and Orthogonal",
            onnx::AttributeProto::INT, false)
      .Attr("replicaGroupingStride", "ReplicaGrouping stride (instead of a CommGroup)",
            onnx::AttributeProto::INT, false)
      .Attr("replicaGroupingSize", "ReplicaGrouping group size (instead of a CommGroup)",
            onnx::AttributeProto::INT, false)
      .Input(0, "X", "this replica's input", "T")
      .Output(0, "Y", "the collective's result", "T")
      .TypeConstraint("T", {"tensor(float)", "tensor(float16)"}, "floating point");
  if (reduces) {
    s.Attr("op",
           "CollectiveOperator: 0 Add (default), 1 Mean, 2 Mul, 3 Min, 4 Max, 5 LogicalAnd, 6 "
           "LogicalOr, 7 SquareAdd",
           onnx::AttributeProto::INT, static_cast<int64_t>(0));
  }
  return s;
}

void registerCollectives() {
  {
    onnx::OpSchema s = collectiveSchema("ReplicatedAllReduce", true,
                                        "Every replica of the group gets the reduction of the "
                                        "group's inputs.");
    s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = collectiveSchema(
        "ReplicatedReduceScatter", true,
        "The group's inputs (n elements, flattened, zero-padded to k*ceil(n/k)) are reduced; "
        "member i of the group gets part i, ceil(n/k) elements.");
    s.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
      collectiveInference(ctx, [](int64_t n, int64_t k) { return (n + k - 1) / k; });
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = collectiveSchema("ReplicatedAllGather", false,
                                        "Every replica of the group gets the group's inputs "
                                        "(flattened) concatenated in group order.");
    s.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
      collectiveInference(ctx, [](int64_t n, int64_t k) { return n * k; });
    });
    onnx::RegisterSchema(std::move(s));
  }
}

void registerAll() {
  registerCollectives();
  {
    onnx::OpSchema s = lossSchema("IdentityLoss");
    s.SetDoc("The loss is its input, reduced as `reduction` says.")
        .Input(0, "A", "loss values", "T")
        .Output(0, "B", "loss", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) { lossInference(ctx, 0); });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = lossSchema("L1");
    s.SetDoc("lambda * |A|, reduced as `reduction` says.")
        .Attr("lambda", "scale", onnx::AttributeProto::FLOAT, true)
        .Input(0, "A", "input", "T")
        .Output(0, "B", "loss", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) { lossInference(ctx, 0); });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = lossSchema("Nll");
    s.SetDoc("Negative log likelihood of probabilities [..., C] at integer labels [...].")
        .Attr("ignoreIndex", "label value that contributes no loss", onnx::AttributeProto::INT,
              false)
        .Attr("inputIsLogProbability", "1: probs are log-probabilities", onnx::AttributeProto::INT,
              static_cast<int64_t>(0))
        .Input(0, "probs", "probabilities", "T")
        .Input(1, "labels", "class indices", "Tind")
        .Output(0, "loss", "loss", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeConstraint("Tind",
                        {"tensor(int32)", "tensor(int64)", "tensor(uint32)", "tensor(uint64)",
                         "tensor(int16)", "tensor(uint16)", "tensor(int8)", "tensor(uint8)"},
                        "integer labels")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) { lossInference(ctx, 1); });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s;
    s.SetName("Gelu")
        .SetDomain(kGraphcoreDomain)
        .SinceVersion(1)
        .SetLocation(__FILE__, __LINE__)
        .SetDoc("Gaussian error linear unit (tanh approximation).")
        .Input(0, "X", "input", "T")
        .Output(0, "Y", "output", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
}

}  // namespace

void registerGraphcoreSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (ranges.Map().count(kGraphcoreDomain) == 0) {
      ranges.AddDomainToVersion(kGraphcoreDomain, 1, 1);
    }
    // Another library in the process (PopART itself) may have registered the domain's schemas: keep
    // those.
    if (onnx::OpSchemaRegistry::Schema("IdentityLoss", 1, kGraphcoreDomain) == nullptr) {
      registerAll();
    }
  });
}

}  // namespace xtrain::ir::onnxutil
