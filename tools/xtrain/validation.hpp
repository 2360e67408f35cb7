// Validation in xtrain (--val-data, --val-every): the model's forward pass on a held-out data set
// with the training session's current weights, reporting the mean loss and, for a classifier, the
// top-1 accuracy.
//
// An InferenceSession of the same model evaluates: before each evaluation the training session's
// weights (and other state such as BatchNormalization's running statistics) are copied into it
// through weightsToHost / readWeights / writeWeights / weightsFromHost, so training is untouched.
// Under a launcher every instance evaluates its share of the validation micro-batches (every
// instance holds the same weights after a step) and the instances gather their sums over the job's
// world (comm/job.hpp); instance 0 prints the result.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classification_head.hpp"
#include "data_source.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

struct ValidationResult {
  int64_t samples = 0;
  double loss = 0;                   // mean over the samples of the loss tensor's mean per batch
  std::optional<double> accuracy;    // top-1, in [0, 1]; empty without a classification loss
  int64_t correct = 0, counted = 0;  // counted: samples whose label is not ignore_index
};

// Opens --val-data for the model's inputs (per micro-batch infos); throws xtrain::error naming
// --val-data, the file and, for a mismatch, the dataset, the model's input and the shapes.
std::unique_ptr<DataSource> openValidationData(const std::string& path,
                                               const std::map<TensorId, TensorInfo>& inputs);

struct ValidationSetup {
  std::string dataPath;  // --val-data
  // The model for a micro-batch of n samples (serialized ONNX or a path) and its input shapes:
  // evaluation batches hold --micro-batch-size samples, and the last one of the set fewer.
  std::function<std::string(int64_t n)> model;
  std::function<InputShapeInfo(int64_t n)> shapes;
  std::map<TensorId, TensorInfo> inputs;  // per micro-batch of microBatch samples
  int64_t microBatch = 1;
  TensorId loss;
  std::optional<ClassificationHead> head;
  std::vector<TensorId> weights;  // candidates: the model's floating-point initializers
  int64_t instance = 0, instances = 1;
};

class Validator {
 public:
  // Compiles the evaluation session(s) of this instance's share of `data` (openValidationData).
  Validator(ValidationSetup setup, std::unique_ptr<DataSource> data, TrainingSession& training);
  ~Validator();
  int64_t numSamples() const;
  // Collective under a launcher: every instance calls it with the same `index`. Returns the job's
  // result on instance 0, nullopt on the others.
  std::optional<ValidationResult> evaluate(int64_t index);

 private:
  struct Part;
  ValidationResult evaluateShare();
  ValidationSetup setup_;
  TrainingSession& training_;
  std::unique_ptr<DataSource> data_;
  std::vector<std::unique_ptr<Part>> parts_;  // one per batch size of this instance's share
  std::vector<TensorId> weights_;             // copied from training before each evaluation
};

}  // namespace xtrain::tools
