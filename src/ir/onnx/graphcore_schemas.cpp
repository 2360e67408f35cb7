// ONNX schemas for PopART's ai.graphcore opset 1 ops that the Builder emits, so that the ONNX
// checker validates their attributes and ONNX shape inference (Builder::getTensorShape) sees
// through them.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

#include "ir/graph.hpp"
#include "ir/onnx/graphcore_schema_parts.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/reductiontype.hpp"

namespace xtrain::ir::onnxutil {

onnx::OpSchema graphcoreSchema(const char* name, const char* doc) {
  onnx::OpSchema s;
  s.SetName(name)
      .SetDomain(kGraphcoreDomain)
      .SinceVersion(1)
      .SetLocation(__FILE__, __LINE__)
      .SetDoc(doc);
  return s;
}

void broadcastInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (onnx::hasInputShape(ctx, 0) && onnx::hasInputShape(ctx, 1)) {
    onnx::bidirectionalBroadcastShapeInference(
        onnx::getInputShape(ctx, 0), onnx::getInputShape(ctx, 1), *onnx::getOutputShape(ctx, 0));
  }
}

void registerFloatUnarySchema(const char* name, const char* doc) {
  onnx::OpSchema s = graphcoreSchema(name, doc);
  s.Input(0, "X", "input", "T")
      .Output(0, "Y", "output", "T")
      .TypeConstraint("T", {"tensor(float)", "tensor(float16)"}, "floating point")
      .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  onnx::RegisterSchema(std::move(s));
}

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
  onnx::OpSchema s = graphcoreSchema(name, "");
  s.Attr("reduction", "ReductionType: 0 Sum, 1 Mean, 2 NoReduction", onnx::AttributeProto::INT,
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
  onnx::OpSchema s = graphcoreSchema(name, doc);
  s.Attr("commGroupType",
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

const std::vector<std::string> kOffsetTypes = {"tensor(uint32)", "tensor(int32)", "tensor(int64)"};

// The dynamic slice family's common form: {tensor, offset[, slice]} -> tensor-shaped output.
onnx::OpSchema dynamicSchema(const char* name, const char* doc, bool withSlice, bool noOverlap) {
  onnx::OpSchema s = graphcoreSchema(name, doc);
  s.Attr("axes", "the sliced axes", onnx::AttributeProto::INTS, true)
      .Attr("sizes", "the slice's size along each axis", onnx::AttributeProto::INTS, true)
      .Input(0, "tensor", "the full tensor", "T")
      .Input(1, "offset", "one offset per axis (clamped into [0, dim - size])", "Toff")
      .Output(0, "output", "the result", "T")
      .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeConstraint("Toff", kOffsetTypes, "integer offsets");
  if (withSlice) s.Input(2, "slice", "the slice", "T");
  if (noOverlap) {
    s.Attr("noOverlap", "1: the slices of a loop do not overlap (a hint)",
           onnx::AttributeProto::INT, static_cast<int64_t>(0));
  }
  return s;
}

// Ops that pass an input through: Detach, Nop, CopyVarUpdate (its updater), Reverse, PrintTensor.
void registerPassThroughOps() {
  const auto passThrough = [](const char* name, const char* doc) {
    onnx::OpSchema s = graphcoreSchema(name, doc);
    s.Input(0, "X", "input", "T")
        .Output(0, "Y", "output", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    return s;
  };
  onnx::RegisterSchema(passThrough("Detach", "Y = X; no gradient flows back through it."));
  onnx::RegisterSchema(passThrough("Nop", "Y = X, gradient included."));
  {
    onnx::OpSchema s = graphcoreSchema(
        "CopyVarUpdate", "Y = updater, the value the variable (input 0) takes after the op.");
    s.Input(0, "variable", "the variable written", "T")
        .Input(1, "updater", "its new value", "T")
        .Output(0, "Y", "the updated variable", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = passThrough("Reverse", "X reversed along `dimensions`.");
    s.Attr("dimensions", "axes to reverse", onnx::AttributeProto::INTS, false);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = passThrough("PrintTensor", "Y = X; X is logged each time the op runs.");
    s.Attr("print_gradient", "1: log the gradient too", onnx::AttributeProto::INT,
           static_cast<int64_t>(1))
        .Attr("title", "title of the printed tensor", onnx::AttributeProto::STRING, false)
        .Attr("summariseThreshold", "summarise tensors of more elements (0: never)",
              onnx::AttributeProto::INT, static_cast<int64_t>(1000))
        .Attr("edgeItems", "values kept at each end when summarising", onnx::AttributeProto::INT,
              static_cast<int64_t>(3))
        .Attr("maxLineWidth", "lines break past this width (0: never)", onnx::AttributeProto::INT,
              static_cast<int64_t>(75))
        .Attr("digits", "significant digits", onnx::AttributeProto::INT, static_cast<int64_t>(8))
        .Attr("floatFormat", "0 auto, 1 fixed, 2 scientific, 3 none", onnx::AttributeProto::INT,
              static_cast<int64_t>(0))
        .Attr("separator", "between values", onnx::AttributeProto::STRING, std::string(" "))
        .Attr("openBracket", "opens a dimension", onnx::AttributeProto::STRING, std::string("["))
        .Attr("closeBracket", "closes a dimension", onnx::AttributeProto::STRING, std::string("]"));
    onnx::RegisterSchema(std::move(s));
  }
}

// Elementwise arithmetic: Scale, Round, ScaledAdd, Remainder, Fmod.
void registerArithmeticOps() {
  {
    onnx::OpSchema s = graphcoreSchema("Scale", "Y = scale * X.");
    s.Attr("scale", "the factor", onnx::AttributeProto::FLOAT, true)
        .Input(0, "X", "input", "T")
        .Output(0, "Y", "output", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s =
        graphcoreSchema("Round", "X rounded to the nearest integer, halves to even.");
    s.Input(0, "X", "input", "T")
        .Output(0, "Y", "output", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = graphcoreSchema(
        "ScaledAdd", "C = scale0 * A + scale1 * B (numpy broadcasting); scale tensors override.");
    s.Attr("scale0", "factor of A", onnx::AttributeProto::FLOAT, 1.0f)
        .Attr("scale1", "factor of B", onnx::AttributeProto::FLOAT, 1.0f)
        .Input(0, "A", "first term", "T")
        .Input(1, "B", "second term", "T")
        .Input(2, "scale0", "scalar factor of A", "T", onnx::OpSchema::Optional)
        .Input(3, "scale1", "scalar factor of B", "T", onnx::OpSchema::Optional)
        .Output(0, "C", "sum", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction(broadcastInference);
    onnx::RegisterSchema(std::move(s));
  }
  for (const char* name : {"Remainder", "Fmod"}) {
    onnx::OpSchema s = graphcoreSchema(
        name,
        "Elementwise remainder of A / B (numpy broadcasting): Remainder has the sign of the "
        "divisor (Python's %), Fmod that of the dividend (C's fmod).");
    s.Input(0, "A", "dividend", "T")
        .Input(1, "B", "divisor", "T")
        .Output(0, "C", "remainder", "T")
        .TypeConstraint("T",
                        {"tensor(float)", "tensor(float16)", "tensor(double)", "tensor(int32)",
                         "tensor(int64)"},
                        "floating point or INT32/INT64")
        .TypeAndShapeInferenceFunction(broadcastInference);
    onnx::RegisterSchema(std::move(s));
  }
}

// Slices at tensor offsets: DynamicSlice, DynamicUpdate, DynamicZero, DynamicAdd.
void registerDynamicOps() {
  {
    onnx::OpSchema s =
        dynamicSchema("DynamicSlice", "The slice of `sizes` at offset.", false, true);
    s.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 0)) return;
      const auto& in = onnx::getInputShape(ctx, 0);
      std::vector<int64_t> axes, sizes;
      onnx::getRepeatedAttribute(ctx, "axes", axes);
      onnx::getRepeatedAttribute(ctx, "sizes", sizes);
      auto* out = onnx::getOutputShape(ctx, 0);
      *out = in;
      const int64_t rank = in.dim_size();
      for (size_t i = 0; i < axes.size() && i < sizes.size(); ++i) {
        const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank)
          fail_shape_inference("DynamicSlice: axis ", axes[i], " out of range");
        out->mutable_dim(static_cast<int>(a))->set_dim_value(sizes[i]);
      }
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = dynamicSchema("DynamicUpdate",
                                     "A copy of tensor with slice written at offset.", true, true);
    s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = dynamicSchema(
        "DynamicZero", "A copy of tensor with the slice at offset zeroed.", false, false);
    s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s =
        dynamicSchema("DynamicAdd", "A copy of tensor with slice added at offset.", true, false);
    s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
}

// Init, Abort and GroupNormalization.
void registerOtherOps() {
  {
    onnx::OpSchema s = graphcoreSchema(
        "Init", "A tensor of `shape` and `data_type` (xtrain/PopART DataType value), zeroed.");
    s.Attr("shape", "the tensor's shape", onnx::AttributeProto::INTS, true)
        .Attr("data_type", "DataType enum value (9 FLOAT, 10 FLOAT16, 5 INT64, ...)",
              onnx::AttributeProto::INT, true)
        .Attr("init_type", "0 NoInit, 1 Zero", onnx::AttributeProto::INT, true)
        .Attr("batch_axis", "the batch axis (recorded)", onnx::AttributeProto::INT, false)
        .Attr("tensor_type", "PopART's TensorType of the result (PopART writes it; ignored)",
              onnx::AttributeProto::INT, false)
        .Output(0, "Y", "the tensor", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
          const int64_t t = onnx::getAttribute(ctx, "data_type", int64_t{-1});
          if (t < 0 || t >= static_cast<int64_t>(DataType::UNDEFINED)) {
            fail_type_inference("Init: data_type ", t, " is not a DataType value");
          }
          int onnxType = 0;
          try {
            onnxType = dataTypeToOnnx(static_cast<DataType>(t));
          } catch (const std::exception&) {
            fail_type_inference("Init: data_type ", t, " has no ONNX element type");
          }
          ctx.getOutputType(0)->mutable_tensor_type()->set_elem_type(onnxType);
          std::vector<int64_t> shape;
          onnx::getRepeatedAttribute(ctx, "shape", shape);
          auto* out = onnx::getOutputShape(ctx, 0);
          for (int64_t d : shape) out->add_dim()->set_dim_value(d);
        });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = graphcoreSchema(
        "Abort", "Fails the run when it executes (and its optional scalar condition is nonzero).");
    s.Input(0, "condition", "optional scalar condition", "T", onnx::OpSchema::Optional)
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext&) {});
    onnx::RegisterSchema(std::move(s));
  }
  {
    // The op and its kernel are defined elsewhere (ai.graphcore GroupNormalization); this schema
    // lets Builder models that use it pass the checker. Y has X's type and shape; mean and
    // invStdDev are X's element type and 1-D [N * num_groups], as PopART's GroupNormOp makes them.
    onnx::OpSchema s = graphcoreSchema(
        "GroupNormalization", "Group normalisation of X [N, C, ...] over num_groups groups.");
    s.Attr("num_groups", "the number of channel groups", onnx::AttributeProto::INT, true)
        .Attr("epsilon", "added to the variance", onnx::AttributeProto::FLOAT, 1e-5f)
        .Input(0, "X", "input [N, C, ...]", "T")
        .Input(1, "scale", "scale [C]", "T")
        .Input(2, "bias", "bias [C]", "T")
        .Output(0, "Y", "output", "T")
        .Output(1, "mean", "the groups' means", "T", onnx::OpSchema::Optional)
        .Output(2, "invStdDev", "the groups' inverse standard deviations", "T",
                onnx::OpSchema::Optional)
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
          onnx::propagateShapeAndTypeFromFirstInput(ctx);
          const int64_t groups = onnx::getAttribute(ctx, "num_groups", int64_t{0});
          for (size_t i = 1; i < ctx.getNumOutputs(); ++i) {
            onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
            auto* dim = onnx::getOutputShape(ctx, i)->add_dim();
            if (!onnx::hasInputShape(ctx, 0)) continue;
            const auto& x = onnx::getInputShape(ctx, 0);
            if (x.dim_size() > 0 && x.dim(0).has_dim_value() && groups > 0) {
              dim->set_dim_value(x.dim(0).dim_value() * groups);
            }
          }
        });
    onnx::RegisterSchema(std::move(s));
  }
}

void registerUtilityOps() {
  registerPassThroughOps();
  registerArithmeticOps();
  registerDynamicOps();
  registerOtherOps();
}

void registerAll() {
  registerCollectives();
  registerGraphcoreUnarySchemas();
  registerGraphcoreMiscSchemas();
  registerCtcAndMultiConvSchemas();
  registerUtilityOps();
  registerSortAndRandomSchemas();
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
      registerCallSchema();
    }
  });
}

}  // namespace xtrain::ir::onnxutil
