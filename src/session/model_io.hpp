// The session's view of ONNX: import a model into the IR, read its initializers, write it back with
// new weights. A thin layer over src/ir/onnx so the session never sees protobuf.
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <memory>
#include <string>

#include "common/host_tensor.hpp"
#include "ir/graph.hpp"

namespace xtrain::session {

struct ImportedModel {
  std::unique_ptr<ir::Graph> graph;
  std::string bytes;  // the serialized ModelProto as given
  std::map<std::string, std::string> metadata;
  // Initial values of grouped weights, [groups] + shape (the graph holds their per-replica shape).
  std::map<TensorId, HostTensor> groupedValues;
};

// `model` is a file path when such a file exists, else serialized ModelProto bytes. `replicas`: the
// global replication factor, which decides the group count of grouped weights.
// `batchNormRunningVariance`: SessionOptions::batchNormRunningVariance ("onnx", "pytorch" or
// "auto"; anything else is an xtrain::error naming the option).
ImportedModel importModel(const std::string& model,
                          const std::map<TensorId, TensorInfo>& inputShapes, int64_t replicas,
                          const std::string& batchNormRunningVariance = "onnx");
// SessionOptions::groupNormStridedChannelGrouping: every GroupNormalization of `graph` groups its
// channels strided (attribute strided_channel_grouping = 1). Before autodiff: its GroupNormGrad
// copies the attribute.
void useStridedGroupNorm(ir::Graph& graph);
// SessionOptions::partialsTypeMatMuls (non-empty): every MatMul of `graph` without its own
// __partials_type (Builder.setPartialsType) gets `partialsType`, as PopART's MatMul reads the
// option when it has no attribute. Before autodiff: the gradients' products copy the attribute.
void useMatMulPartialsType(ir::Graph& graph, const std::string& partialsType);
// Every initializer of a model (path or bytes), by name.
std::map<TensorId, HostTensor> readInitializers(const std::string& model);
// Writes `modelBytes` to `path` with the given initializers replaced, and `extra` initializers
// added (e.g. optimizer state under PopART's names).
// `metadata` keys are set in the model's metadata_props.
void writeModelWithWeights(const std::string& modelBytes,
                           const std::map<TensorId, HostTensor>& values, const std::string& path,
                           const std::map<TensorId, HostTensor>& extra = {},
                           const std::map<std::string, std::string>& metadata = {});

// The prefixes of PopART's initializer names of a weight's optimizer state
// (docs/replication-semantics.md section 8, docs/optimizers.md section 8): "Accl___W" for SGD's
// velocity, "Accl1___W".. "Accl3___W" for the Adam and Adaptive moments, "Step___W" for Adam's step
// count, "Accum___W" for the gradient accumulator.
inline constexpr const char* kStateInitializerPrefixes[] = {"Accl___",  "Accl1___", "Accl2___",
                                                            "Accl3___", "Step___",  "Accum___"};

}  // namespace xtrain::session

#pragma GCC visibility pop
