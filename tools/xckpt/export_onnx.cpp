// xckpt export-onnx: a checkpoint's weights (and optionally its optimizer state) written into an
// ONNX model's initializers.
#include <map>
#include <set>

#include "checkpoint/checkpoint.hpp"
#include "commands.hpp"
#include "common/output_file.hpp"
#include "ir/onnx/model_file.hpp"
#include "ir/onnx/onnx_export.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "ir/onnx/onnx_metadata.hpp"

namespace xtrain::tools::xckpt {

namespace ckpt = xtrain::checkpoint;

namespace {

constexpr const char* kWeights = "/weights/";
constexpr const char* kOptimizer = "/optimizer/";

// PopART's initializer names for optimizer state (section 8 of docs/replication-semantics.md):
// the prefix put before the weight's name, by checkpoint slot.
const std::map<std::string, std::string>& popartPrefixes() {
  static const std::map<std::string, std::string> prefixes = {
      {"velocity", "Accl___"},      // SGD momentum
      {"accumulator", "Accum___"},  // gradient accumulation
      {"m", "Accl1___"},            // Adam first moment
      {"v", "Accl2___"},            // Adam second moment
      {"step", "Step___"},          // Adam step count
      {"v1", "Accl1___"},           // Adaptive: sum or mean of g^2
      {"v2", "Accl2___"},           // Adaptive: mean of g (CenteredRMSProp), of x^2 (AdaDelta)
      {"v3", "Accl3___"},           // Adaptive momentum
  };
  return prefixes;
}

// True when `name` is an optimizer-state initializer of some weight in `weights`.
bool isStateName(const std::string& name, const std::set<std::string>& weights) {
  for (const auto& [slot, prefix] : popartPrefixes()) {
    if (name.starts_with(prefix) && weights.count(name.substr(prefix.size())) > 0) return true;
  }
  return false;
}

}  // namespace

int exportOnnx(const Args& args, std::ostream& out) {
  std::vector<std::string> flags;
  const Args paths = positional(args, 3, "export-onnx", {"--with-optimizer-state"}, &flags);
  const bool withState = !flags.empty();
  const std::string& checkpointPath = paths[0];
  const std::string& modelPath = paths[1];
  const std::string& outPath = paths[2];

  const ckpt::Contents contents = ckpt::read(checkpointPath);
  // Only the initializers are read: the graph need not import (its input shapes may be open).
  const std::string modelBytes = ir::readModelFile(modelPath);
  const std::map<TensorId, HostTensor> initializers = ir::readOnnxInitializers(modelBytes);

  // The model's weights: its floating-point initializers, less state from an earlier export.
  // Grouped weights keep their [groups] leading dimension, as the checkpoint does.
  std::map<TensorId, const HostTensor*> variables;
  for (const auto& [id, value] : initializers) {
    if (isFloatingPoint(value.dataType())) variables.emplace(id, &value);
  }
  std::set<std::string> names;
  for (const auto& [id, t] : variables) names.insert(id);
  std::map<TensorId, HostTensor> values;
  std::map<TensorId, HostTensor> extra;
  for (const auto& [id, t] : variables) {
    if (isStateName(id, names)) continue;
    const std::string path = kWeights + ckpt::encodeName(id);
    const auto it = contents.datasets.find(path);
    if (it == contents.datasets.end()) {
      throw error("weight '{}' of model '{}' is not in checkpoint '{}' (no dataset {})", id,
                  modelPath, checkpointPath, path);
    }
    const TensorInfo& want = t->info();
    if (it->second.info() != want) {
      throw error("weight '{}' is {} in model '{}' but {} in checkpoint '{}'", id, want.toString(),
                  modelPath, it->second.info().toString(), checkpointPath);
    }
    values.emplace(id, it->second);
  }
  const size_t weightCount = values.size();
  size_t stateCount = 0;
  for (const auto& [path, value] : contents.datasets) {
    if (path.starts_with(kWeights)) {
      const std::string id = ckpt::decodeName(path.substr(std::string(kWeights).size()));
      if (values.count(id) == 0) {
        throw error("checkpoint '{}' holds weight '{}', which is not a weight of model '{}'",
                    checkpointPath, id, modelPath);
      }
    } else if (withState && path.starts_with(kOptimizer)) {
      // /optimizer/<weight>/<slot>
      const std::string rest = path.substr(std::string(kOptimizer).size());
      const size_t slash = rest.find('/');
      const std::string id = ckpt::decodeName(rest.substr(0, slash));
      const std::string slot = slash == std::string::npos ? "" : rest.substr(slash + 1);
      const auto prefix = popartPrefixes().find(slot);
      if (prefix == popartPrefixes().end()) {
        throw error("checkpoint dataset {}: optimizer slot '{}' has no PopART initializer name",
                    path, slot);
      }
      const std::string name = prefix->second + id;
      // Replaces the state of an earlier export, else is added.
      (variables.count(name) > 0 ? values : extra).emplace(name, value);
      ++stateCount;
    }
  }
  std::map<std::string, std::string> metadata;
  if (withState && stateCount > 0 && !contents.attributes.optimizerType.empty()) {
    metadata[ir::kOptimizerStateOfKey] = contents.attributes.optimizerType;
  }
  writeOutputFile(outPath, ir::updateOnnxInitializers(modelBytes, values, extra, metadata),
                  "xckpt export-onnx");
  out << "wrote " << outPath << ": " << weightCount << " weights from " << checkpointPath;
  if (withState) out << " and " << stateCount << " optimizer state tensors";
  out << "\n";
  return 0;
}

}  // namespace xtrain::tools::xckpt
