// ONNX import: a model file or serialized ModelProto -> an ir::Graph. Internal API (no protobuf
// here).
//
// Mapping:
//  - graph inputs without initializer -> TensorKind::Stream, listed in graph.inputs() in ONNX
//    order; shapes from the model, or from OnnxImportOptions::inputShapeInfo, which takes
//    precedence (PopART's InputShapeInfo);
//  - initializers of floating type -> Variable, others -> Const; Constant nodes -> Const tensors;
//  - every other node -> graph.addOp (the op registry canonicalises it and infers its outputs);
//  - graph outputs -> graph.outputs(); ai.onnx opset -> graph.setOnnxOpset.
//  - with OnnxImportOptions::evaluateConstants, each op whose result is known at import (Shape,
//  Size,
//    and deterministic ai.onnx ops on constants) is folded into Const tensors as it is added
//    (constant_folding.hpp), so computed shapes reach Reshape, Expand, Resize, ... as constants.
// Supported: ai.onnx opsets 7..17, ai.graphcore opset 1. A model with ops xtrain lacks fails once,
// listing every missing (op type, domain, opset) with its nodes.
// Every failure throws xtrain::error naming the model source and the tensor, node or attribute at
// fault. Thread-safety: concurrent imports are fine (each builds its own graph).
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <memory>
#include <string>

#include "ir/constant_folding.hpp"
#include "ir/graph.hpp"
#include "xtrain/names.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::ir {

inline constexpr int kMinOnnxOpset = 6;  // PopART's Builder has opsets 6 to 11
inline constexpr int kMaxOnnxOpset = 17;
inline constexpr int kGraphcoreOpset = 1;

// The running variance that a BatchNormalization in training mode keeps (docs/onnx-import.md):
//  - Onnx: the batch's population variance, as the ONNX operator defines it (the default);
//  - PyTorch: the unbiased variance (times M / (M - 1), M values per channel), as PyTorch's
//    BatchNorm keeps it; training with one value per channel is then an error, as in PyTorch;
//  - Auto: PyTorch's when the model's producer_name is "pytorch" (what torch.onnx.export
//    writes), else ONNX's.
// The normalisation itself uses the population variance under every choice. The import sets the
// choice on each BatchNormalization as its running_variance attribute (ir/ops/norm_ops.cpp).
enum class BatchNormRunningVariance { Onnx, PyTorch, Auto };

// "onnx", "pytorch" or "auto"; anything else throws xtrain::error naming `what` (the option the
// text came from) and the value.
BatchNormRunningVariance parseBatchNormRunningVariance(const std::string& text,
                                                       const std::string& what);
const char* batchNormRunningVarianceName(BatchNormRunningVariance v);

struct OnnxImportOptions {
  // Type and shape of stream inputs, overriding the model's (needed when the model's dims are
  // symbolic).
  std::map<TensorId, TensorInfo> inputShapeInfo;
  // Run onnx::checker::check_model before importing.
  bool runChecker = true;
  // The replicas the model is imported for (the global replication factor), or 0. When positive,
  // a weight whose VariableSettings (model metadata) give it more than one group over this many
  // replicas becomes a tensor of its per-replica shape: its initializer's leading dimension must be
  // the group count (an error naming the weight and both shapes otherwise), the graph keeps group
  // 0's value and OnnxModel::groupedValues the whole initializer.
  int64_t replicationFactor = 0;
  // Evaluates ops on constant inputs for constant folding (the session passes its kernels'); empty:
  // only Shape and Size are folded.
  ConstantEvaluator evaluateConstants;
  // BatchNormalization's running variance (see BatchNormRunningVariance).
  BatchNormRunningVariance batchNormRunningVariance = BatchNormRunningVariance::Onnx;
};

struct OnnxModel {
  std::unique_ptr<ir::Graph> graph;
  // The serialized original model (a file's contents as read), for export with updated
  // initializers.
  std::string bytes;
  // The model's metadata_props (see onnx_metadata.hpp for the keys xtrain uses).
  std::map<std::string, std::string> metadata;
  // ai.onnx opset version of the model.
  int onnxOpset = 0;
  // The initial values of grouped weights, [groups] + shape (see
  // OnnxImportOptions::replicationFactor).
  std::map<TensorId, HostTensor> groupedValues;
  // The model's producer_name ("pytorch", "xtrain", ...; empty when it gives none).
  std::string producerName;
  // OnnxImportOptions::batchNormRunningVariance resolved for this model: Onnx or PyTorch.
  BatchNormRunningVariance batchNormRunningVariance = BatchNormRunningVariance::Onnx;
};

// modelPathOrBytes: a file path if such a file exists, else serialized ModelProto bytes.
OnnxModel importOnnxModel(const std::string& modelPathOrBytes,
                          const OnnxImportOptions& options = {});

// A graph input (without initializer) as the model declares it, before any shape is bound.
struct DeclaredInput {
  TensorId id;
  DataType type = DataType::UNDEFINED;  // UNDEFINED when the model gives none
  bool hasShape = false;                // false: the model gives no shape at all
  // One per dimension: its size, or -1 when the model leaves it open (symbolic or unset).
  std::vector<int64_t> dims;
  // The symbolic name of each open dimension ("batch"), "" for unnamed or fixed ones.
  std::vector<std::string> dimParams;
};

// The model's graph inputs without initializer, in ONNX order, without importing the graph: what a
// trainer needs to bind open dimensions (to the micro-batch size, to a data set's shapes) before it
// creates a session with InputShapeInfo. Throws xtrain::error as importOnnxModel does for an
// unreadable model.
std::vector<DeclaredInput> declaredInputs(const std::string& modelPathOrBytes);

// Every initializer of the model by name (weights and integer constants), without importing the
// graph: works for models whose input shapes are open. Throws xtrain::error naming the model and
// the initializer at fault.
std::map<TensorId, HostTensor> readOnnxInitializers(const std::string& modelPathOrBytes);

// Parses the model and runs the opset check and onnx::checker::check_model on it, without building
// a graph (no op needs to be known to xtrain). Throws xtrain::error as importOnnxModel does.
void checkOnnxModel(const std::string& modelPathOrBytes);

}  // namespace xtrain::ir

#pragma GCC visibility pop
