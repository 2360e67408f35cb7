// Helpers shared by the training tests: a small MLP built through the Builder, a session of it on
// an IPU-model device, deterministic global batches split among replicas, reading tensors back, and
// running this test binary under xrun (tests whose instances are gtest cases of the same binary).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "testing/process_testing.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {

struct MlpModel {
  std::string proto;
  TensorId x, labels, loss;
  int64_t batch = 4, in = 8, hidden = 15, out = 5;
};

// in -> hidden -> out MLP (weights W1, b1, W2, b2 drawn from `seed`), `activation` (Relu or
// Sigmoid), mean softmax cross-entropy over a micro-batch of `batch`.
MlpModel buildMlpModel(int64_t batch = 4, int64_t in = 8, int64_t hidden = 15, int64_t out = 5,
                       unsigned seed = 5, const std::string& activation = "Relu");

// A prepared training session with weights on the device: `options` says the replicas; the device
// is an IPU model with one IPU per local replica unless `device` is given.
std::unique_ptr<TrainingSession> makeMlpSession(const MlpModel& m, const SessionOptions& options,
                                                const Optimizer& optimizer,
                                                std::shared_ptr<DeviceInfo> device = nullptr);

// Trains steps [firstStep, firstStep + steps) of a job of `globalReplicas` replicas x af
// micro-batches: step k's global batch is drawn from a generator seeded with k, so a resumed job
// sees the same data. This session feeds replicas [replicaOffset, replicaOffset + local replicas).
void trainMlpSteps(TrainingSession& s, const MlpModel& m, int64_t globalReplicas,
                   int64_t replicaOffset, int64_t af, int64_t firstStep, int64_t steps);

// The whole values of the given tensors, concatenated (weightsToHost, then readWeights); FLOAT16
// tensors converted to float. Optimizer state (X___W) is read whole even when sharded.
std::vector<float> readTensors(TrainingSession& s, const std::vector<TensorId>& ids);

// W1, b1, W2, b2 and their velocities (Accl___*).
std::vector<TensorId> mlpWeightsAndVelocities();

// The initializers of two ONNX models agree: the same names and types, values within `tolerance`
// (relative to max(1, |value|); 0: bit for bit). Adds gtest failures naming the tensor.
void expectSameInitializers(const std::string& a, const std::string& b, double tolerance);

// Runs this build's test binary `testBinary` under `xrun <layout>` with the gtest filter and the
// environment assignments `env` ("A=1 B=2").
CommandResult runTestsUnderXrun(const std::string& layout, const std::string& testBinary,
                                const std::string& filter, const std::string& env);

}  // namespace xtrain::testing
