// What a training reads before its session exists: the model and its loss, the per-micro-batch
// shapes of its inputs, the training data, and (with --val-data) how to build the model again for
// validation batches. The built-in example makes them; a model file and --data are read and checked
// against each other here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "data_source.hpp"
#include "options.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

struct TrainingInputs {
  bool example = false;
  std::string model;  // a path, or serialized ONNX (the example, a model read from a FIFO)
  TensorId loss;
  std::map<TensorId, TensorInfo> inputs;  // per micro-batch, batch dimension first
  InputShapeInfo shapes;                  // what the session is told of open dimensions
  std::unique_ptr<DataSource> source;
  // With --val-data: the model's bytes (to find the classifier behind the loss), the model and
  // input shapes for a micro-batch of n samples, and its floating-point initializers (the state to
  // copy).
  std::string modelBytes;
  std::function<std::string(int64_t)> modelFor;
  std::function<InputShapeInfo(int64_t)> shapesFor;
  std::vector<TensorId> weightIds;
};

// The example's (printing its line to `progress`) or --model's and --data's inputs. Throws
// xtrain::error naming the file, the input and the shapes when they do not fit.
TrainingInputs loadTrainingInputs(const TrainOptions& o, std::ostream& progress);

}  // namespace xtrain::tools
