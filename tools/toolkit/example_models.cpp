#include "toolkit/example_models.hpp"

#include <cmath>
#include <random>

#include "xtrain/builder.hpp"

namespace xtrain::tools {

BuiltModel buildMlp(const MlpSpec& spec) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  std::mt19937_64 rng(spec.seed);
  BuiltModel m;
  m.input = builder->addInputTensor(TensorInfo(DataType::FLOAT, {spec.microBatch, spec.layers[0]}), "x");
  TensorId h = m.input;
  for (size_t l = 0; l + 1 < spec.layers.size(); ++l) {
    const int64_t in = spec.layers[l], out = spec.layers[l + 1];
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    std::uniform_real_distribution<float> dist(-bound, bound);
    std::vector<float> w(static_cast<size_t>(in * out)), b(static_cast<size_t>(out));
    for (auto& v : w) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    const std::string n = std::to_string(l + 1);
    TensorId wt = builder->addInitializedInputTensor(ConstVoidData::fromVector<float>({in, out}, w), "W" + n);
    TensorId bt = builder->addInitializedInputTensor(ConstVoidData::fromVector<float>({out}, b), "b" + n);
    h = onnx.add({onnx.matmul({h, wt}, "fc" + n), bt}, "bias" + n);
    if (l + 2 < spec.layers.size()) h = onnx.relu({h}, "relu" + n);
  }
  m.logits = h;
  builder->addOutputTensor(m.logits);
  if (spec.withLoss) {
    m.labels = builder->addInputTensor(TensorInfo(DataType::INT32, {spec.microBatch}), "labels");
    m.loss = onnx.softmaxcrossentropyloss({m.logits, m.labels}, 1, std::nullopt, "mean", "loss")[0];
    builder->addOutputTensor(m.loss);
  }
  m.proto = builder->getModelProto();
  return m;
}

SyntheticClassification makeSyntheticClassification(int64_t samples, int64_t features,
                                                     int64_t classes, uint64_t seed) {
  SyntheticClassification d{samples, features, classes, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> centers(static_cast<size_t>(classes * features));
  for (auto& c : centers) c = 1.5f * normal(rng);
  d.x.resize(static_cast<size_t>(samples * features));
  d.labels.resize(static_cast<size_t>(samples));
  for (int64_t s = 0; s < samples; ++s) {
    const int64_t c = s % classes;
    d.labels[static_cast<size_t>(s)] = static_cast<int32_t>(c);
    for (int64_t f = 0; f < features; ++f) {
      d.x[static_cast<size_t>(s * features + f)] =
          centers[static_cast<size_t>(c * features + f)] + normal(rng);
    }
  }
  return d;
}

}  // namespace xtrain::tools
