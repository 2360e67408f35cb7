// A PopART-style C++ training script: build an MLP with the Builder, train it with SGD on simulated IPUs,
// read the trained weights back and save the model. Port a PopART script by changing the namespace.
//
// It runs unchanged alone or under a launcher (`xrun -n 4 train`, mpirun, srun): xtrain::dist reads the
// job's layout, every instance draws the same global batch of 16 samples per step and trains on its
// replicas' part of it, and the gradients are averaged over all replicas, so every layout trains the
// same model.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include <xtrain/builder.hpp>
#include <xtrain/devicemanager.hpp>
#include <xtrain/dist.hpp>
#include <xtrain/session.hpp>

int main(int argc, char** argv) {
  using namespace xtrain;
  const int64_t globalBatch = 16, features = 8, classes = 3, steps = 60;
  // The job's layout: 1 instance of 1 replica when no launcher started this program.
  const int64_t replicas = dist::getNumTotalReplicas(), localReplicas = dist::getNumLocalReplicas();
  const int64_t offset = dist::getReplicaIndexOffset();
  if (globalBatch % replicas != 0) {
    std::cerr << "the global batch of " << globalBatch << " does not split over " << replicas << " replicas\n";
    return 2;
  }
  const int64_t batch = globalBatch / replicas;  // per replica
  const bool first = dist::getInstanceIndex() == 0;
  // SIGUSR1 and SIGTERM (a scheduler's preemption warning, passed on by xrun) from here on only ask
  // for a stop, which the loop below honours after a whole step.
  dist::handlePreemption();

  // The model: x -> MatMul + bias -> Relu -> MatMul + bias -> softmax cross-entropy.
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> init(-0.3f, 0.3f);
  auto weight = [&](Shape shape, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(shape)));
    for (auto& e : v) e = init(rng);
    return builder->addInitializedInputTensor(ConstVoidData::fromVector<float>(shape, v), name);
  };
  TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {batch, features}), "x");
  TensorId labels = builder->addInputTensor(TensorInfo("INT32", {batch}), "labels");
  TensorId h = onnx.relu({onnx.add({onnx.matmul({x, weight({features, 16}, "W1")}), weight({16}, "b1")})});
  TensorId logits = onnx.add({onnx.matmul({h, weight({16, classes}, "W2")}), weight({classes}, "b2")});
  TensorId loss = onnx.softmaxcrossentropyloss({logits, labels}, 1, std::nullopt, "mean", "loss")[0];
  builder->addOutputTensor(loss);

  // Session: this instance's replicas on simulated IPUs, SGD with momentum, the mean over replicas.
  SessionOptions options;
  dist::configureSessionOptions(options);
  options.accumulationAndReplicationReductionType = ReductionType::Mean;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(localReplicas)}});
  auto session = TrainingSession::createFromOnnxModel(
      builder->getModelProto(), DataFlow(1, {{loss, AnchorReturnType("ALL")}}), loss,
      SGD({{"defaultLearningRate", {0.1f, false}}, {"defaultMomentum", {0.9f, true}}}), device, {},
      options);
  session->prepareDevice();
  session->weightsFromHost();

  // Data: the class is the index of the largest of the first three features.
  // Every instance draws the whole global batch (same seed) and keeps its replicas' samples.
  std::normal_distribution<float> normal;
  std::vector<float> all(globalBatch * features);
  std::vector<int32_t> allLabels(globalBatch);
  std::vector<float> xs(localReplicas * batch * features);
  std::vector<int32_t> ys(localReplicas * batch);
  std::vector<float> losses(localReplicas);
  NDArrayWrapper<float> xa(xs.data(), session->expectedInputBufferShape(x));
  NDArrayWrapper<int32_t> ya(ys.data(), session->expectedInputBufferShape(labels));
  NDArrayWrapper<float> la(losses.data(), session->expectedAnchorBufferShape(loss));
  StepIO stepio({{x, xa}, {labels, ya}}, {{loss, la}});
  float lossValue = 0, firstLoss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < globalBatch; ++i) {
      for (int64_t f = 0; f < features; ++f) all[i * features + f] = normal(rng);
      allLabels[i] = static_cast<int32_t>(
          std::max_element(&all[i * features], &all[i * features] + classes) - &all[i * features]);
    }
    std::copy_n(all.begin() + offset * batch * features, xs.size(), xs.begin());
    std::copy_n(allLabels.begin() + offset * batch, ys.size(), ys.begin());
    session->run(stepio);
    lossValue = 0;  // this instance's replicas' mean
    for (float l : losses) lossValue += l / static_cast<float>(losses.size());
    if (step == 0) firstLoss = lossValue;
    if (first && (step % 10 == 0 || step + 1 == steps)) {
      std::cout << "step " << step << " loss " << lossValue << "\n";
    }
    // Collective: every instance stops after the same step when any of them was asked to. A real
    // script saves a checkpoint here first (session->saveCheckpoint) and calls preemptionAgreed()
    // once more, so that nobody exits before every instance has saved.
    if (step + 1 < steps && dist::preemptionAgreed()) {
      if (first) std::cerr << "preempted after step " << step + 1 << " of " << steps << "\n";
      return dist::kPreemptedExitCode;
    }
  }
  if (argc > 1) session->modelToHost(argv[1]);  // every instance calls it; the first writes
  if (first) std::cout << "loss " << firstLoss << " -> " << lossValue << "\n";
  return std::isfinite(lossValue) && lossValue < firstLoss ? 0 : 1;
}
