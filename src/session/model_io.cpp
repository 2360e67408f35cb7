#include "session/model_io.hpp"

#include "common/output_file.hpp"
#include "ir/onnx/onnx_export.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "session/kernel_spec.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

ImportedModel importModel(const std::string& model,
                          const std::map<TensorId, TensorInfo>& inputShapes, int64_t replicas,
                          const std::string& batchNormRunningVariance) {
  ir::OnnxImportOptions options;
  options.inputShapeInfo = inputShapes;
  options.replicationFactor = replicas;
  options.evaluateConstants = evaluateConstantOp;
  options.batchNormRunningVariance = ir::parseBatchNormRunningVariance(
      batchNormRunningVariance, "SessionOptions.batchNormRunningVariance");
  ir::OnnxModel m = ir::importOnnxModel(model, options);
  if (options.batchNormRunningVariance == ir::BatchNormRunningVariance::Auto &&
      m.batchNormRunningVariance == ir::BatchNormRunningVariance::PyTorch) {
    logging::session::info(
        "BatchNormalization keeps PyTorch's unbiased running variance: the model's producer is "
        "'{}' (SessionOptions.batchNormRunningVariance = \"auto\")",
        m.producerName);
  }
  return ImportedModel{std::move(m.graph), std::move(m.bytes), std::move(m.metadata),
                       std::move(m.groupedValues)};
}

void useStridedGroupNorm(ir::Graph& graph) {
  for (const auto& [id, op] : graph.ops()) {
    if (op->type == "GroupNormalization" && op->domain == ir::kGraphcoreDomain) {
      graph.op(id).attrs.set("strided_channel_grouping", int64_t{1});
    }
  }
}

void useMatMulPartialsType(ir::Graph& graph, const std::string& partialsType) {
  if (partialsType.empty()) return;
  for (const auto& [id, op] : graph.ops()) {
    if (op->type == "MatMul" && op->domain == ir::kOnnxDomain &&
        !op->attrs.has("__partials_type")) {
      graph.op(id).attrs.set("__partials_type", partialsType);
    }
  }
}

std::map<TensorId, HostTensor> readInitializers(const std::string& model) {
  return ir::readOnnxInitializers(model);
}

void writeModelWithWeights(const std::string& modelBytes,
                           const std::map<TensorId, HostTensor>& values, const std::string& path,
                           const std::map<TensorId, HostTensor>& extra,
                           const std::map<std::string, std::string>& metadata) {
  writeOutputFile(path, ir::updateOnnxInitializers(modelBytes, values, extra, metadata),
                  "modelToHost");
}

}  // namespace xtrain::session
