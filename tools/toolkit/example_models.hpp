// Models and data the tools build for themselves: the built-in example of `xtrain` and the
// reference MLP of the benchmarks (docs/performance.md, "Peers"). Built with the public Builder, as
// a user would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/names.hpp"

namespace xtrain::tools {

struct MlpSpec {
  std::vector<int64_t> layers;  // {in, hidden..., classes}
  int64_t microBatch = 32;
  uint64_t seed = 1;  // initial weights
  bool withLoss = true;
};

struct BuiltModel {
  std::string proto;  // serialized ONNX
  TensorId input;     // [microBatch, in] FLOAT
  TensorId labels;    // [microBatch] INT32
  TensorId logits;
  TensorId loss;  // scalar, mean softmax cross-entropy
};

// x -> (MatMul + bias -> Relu)* -> MatMul + bias -> logits; loss = SoftmaxCrossEntropyLoss(logits,
// labels). Weights uniform in +-1/sqrt(fan_in), deterministic in spec.seed.
BuiltModel buildMlp(const MlpSpec& spec);

// A deterministic synthetic classification set: `classes` Gaussian blobs in `features` dimensions.
struct SyntheticClassification {
  int64_t samples = 0;
  int64_t features = 0;
  int64_t classes = 0;
  std::vector<float> x;         // [samples, features]
  std::vector<int32_t> labels;  // [samples]
};
SyntheticClassification makeSyntheticClassification(int64_t samples, int64_t features,
                                                    int64_t classes, uint64_t seed);

}  // namespace xtrain::tools
