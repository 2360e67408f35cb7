// Shared by the collective tests: small models around one replicated collective, host references
// of the collectives (plain loops over every replica's input), and session runners.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {

enum class CollectiveKind { AllReduce, ReduceScatter, AllGather };

// One collective as a test describes it: what, how it combines, and over which groups.
struct CollectiveCase {
  CollectiveKind kind = CollectiveKind::AllReduce;
  CollectiveOperator op = CollectiveOperator::Add;
  CommGroup group;
  // Emits the collective through the Builder's ai.graphcore opset.
  TensorId emit(Builder& b, const TensorId& x) const;
};

// The collective's result on every replica of the job (index: global replica), computed in double
// from every replica's input.
std::vector<std::vector<double>> hostCollective(const CollectiveCase& c, int64_t replicas,
                                                const std::vector<std::vector<double>>& inputs);

// y = collective(x), x a FLOAT [n] stream input.
struct InferenceModel {
  std::string proto;
  TensorId x, y;
};
InferenceModel buildInferenceModel(int64_t n, const CollectiveCase& c);

// h = x * w; c = collective(h); loss = sum((c * k)^2) with constant k = 1, 1.5, 2, ... per replica
// (identityloss Sum): every replica's loss depends on the whole group's inputs.
struct TrainingModel {
  std::string proto;
  TensorId x, w, loss;
  std::vector<float> k;
};
TrainingModel buildTrainingModel(int64_t n, const std::vector<float>& w0, const CollectiveCase& c,
                                 int64_t replicas);
// The job's total loss (sum over the replicas) of that model, on the host.
double hostTrainingLoss(const TrainingModel& m, const CollectiveCase& c, int64_t replicas,
                        const std::vector<double>& w, const std::vector<std::vector<double>>& x);
// d(total loss)/dw by central differences of hostTrainingLoss.
std::vector<double> hostGradient(const TrainingModel& m, const CollectiveCase& c, int64_t replicas,
                                 const std::vector<double>& w,
                                 const std::vector<std::vector<double>>& x);

// Session options for L local replicas of one instance (no replication when L == 1).
SessionOptions localReplicas(int64_t L);

// Runs one step of an inference session (IPU model with `localReplicas` IPUs) feeding `inputs`
// (one vector per local replica); returns y per local replica.
std::vector<std::vector<float>> runInference(const InferenceModel& m, const SessionOptions& o,
                                             const std::vector<std::vector<float>>& inputs);
// One SGD step (learning rate lr, Sum reduction); returns w after it.
std::vector<float> trainOneStep(const TrainingModel& m, const SessionOptions& o, float lr,
                                const std::vector<std::vector<float>>& inputs);

// The session's local replicas are the job's replicas [offset, offset + L) (from the options).
// Runs c on `inputs` (one row per replica of the job) and checks each local replica's result
// against hostCollective.
void expectCollectiveMatchesHost(const CollectiveCase& c, const SessionOptions& o,
                                 const std::vector<std::vector<float>>& inputs);
// One SGD step of buildTrainingModel(n, ...) moves w by -lr * d(total loss)/dw, the gradient of
// the job's total loss by finite differences (Sum reduction over the replicas).
void expectGradientMatchesHost(const CollectiveCase& c, const SessionOptions& o, int64_t n);

// Replica r's input: 0..n-1 + 100 r (distinct per replica, so group mix-ups show).
std::vector<std::vector<float>> distinctInputs(int64_t replicas, int64_t n);

// 0, 1, 2, ... n-1 (+ offset).
std::vector<float> arange(int64_t n, float offset = 0.0f);
std::vector<double> toDouble(const std::vector<float>& v);

}  // namespace xtrain::testing
