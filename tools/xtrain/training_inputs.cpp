#include "training_inputs.hpp"

#include <sys/stat.h>

#include "checkpoint/dataset_reader.hpp"
#include "input_shapes.hpp"
#include "ir/onnx/model_file.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "toolkit/example_models.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::tools {

namespace {

TrainingInputs exampleInputs(const TrainOptions& o, std::ostream& progress) {
  TrainingInputs in;
  in.example = true;
  MlpSpec spec;
  spec.layers = {32, 64, 8};
  spec.microBatch = o.microBatchSize;
  spec.seed = 1;
  BuiltModel m = buildMlp(spec);
  in.model = m.proto;
  in.loss = m.loss;
  in.inputs[m.input] = TensorInfo(DataType::FLOAT, {o.microBatchSize, 32});
  in.inputs[m.labels] = TensorInfo(DataType::INT32, {o.microBatchSize});
  in.source = exampleSource(makeSyntheticClassification(4096, 32, 8, 1234), m.input, m.labels);
  progress << "xtrain: built-in example: MLP 32-64-8 on 4096 synthetic samples of 8 classes\n";
  if (!o.valData.empty()) {
    in.modelBytes = m.proto;
    in.modelFor = [spec](int64_t n) {
      MlpSpec s = spec;
      s.microBatch = n;
      return buildMlp(s).proto;
    };
    in.shapesFor = [](int64_t) { return InputShapeInfo(); };
    in.weightIds = Builder::createFromOnnxModel(m.proto)->getTrainableTensorIds();
  }
  return in;
}

TrainingInputs modelFileInputs(const TrainOptions& o) {
  TrainingInputs in;
  in.loss = o.loss;
  in.model = o.model;
  // A model given through a FIFO (process substitution, `--model <(...)`) can be read only once:
  // its bytes go to the input declarations below and the session.
  struct stat st {};
  if (::stat(o.model.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
    in.model = ir::readModelFile(o.model);
  }
  // The model's inputs and their per-micro-batch shapes: the batch dimension is the micro-batch,
  // dimensions the model leaves open (a dynamic-axes export) are the data set's. A regular file
  // is read here and again by the session: handing the session bytes read once instead costs
  // more (createFromOnnxModel copies them twice and keeps one copy besides its own: +1 model
  // size resident, +1-7% start-up CPU measured on the bench models), and messages would name
  // "ONNX model bytes" rather than the file.
  const std::vector<ir::DeclaredInput> declared = ir::declaredInputs(in.model);
  // One reader: the datasets' shapes first, then the samples of every step.
  auto reader = std::make_unique<checkpoint::DatasetReader>(
      o.data, checkpoint::DatasetReader::residentBytesFromEnvironment());
  std::map<TensorId, TensorInfo> dataInfos;
  for (const auto& d : declared) {
    if (reader->has(d.id)) dataInfos.emplace(d.id, reader->info(d.id));
  }
  in.inputs = bindInputShapes(declared, dataInfos, o.microBatchSize, o.model, o.data);
  for (const auto& [id, info] : in.inputs) in.shapes.add(id, info);
  in.source = openHdf5Source(std::move(reader), in.inputs);
  if (!o.valData.empty()) {
    in.modelBytes = in.model == o.model ? ir::readModelFile(o.model) : in.model;
    in.modelFor = [model = in.model](int64_t) { return model; };
    in.shapesFor = [inputs = in.inputs](int64_t n) {
      InputShapeInfo s;
      for (const auto& [id, info] : inputs) {
        Shape shape = info.shape();
        shape[0] = n;
        s.add(id, TensorInfo(info.dataType(), shape));
      }
      return s;
    };
    in.weightIds = Builder::createFromOnnxModel(in.model)->getTrainableTensorIds();
  }
  return in;
}

}  // namespace

TrainingInputs loadTrainingInputs(const TrainOptions& o, std::ostream& progress) {
  return o.model.empty() ? exampleInputs(o, progress) : modelFileInputs(o);
}

}  // namespace xtrain::tools
