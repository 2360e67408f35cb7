#include "input_shapes.hpp"

#include "xtrain/error.hpp"

namespace xtrain::tools {

std::string declaredShapeString(const ir::DeclaredInput& input) {
  if (!input.hasShape) return "(no shape)";
  std::string s = "[";
  for (size_t i = 0; i < input.dims.size(); ++i) {
    if (i) s += ",";
    if (input.dims[i] >= 0) {
      s += std::to_string(input.dims[i]);
    } else {
      s += input.dimParams[i].empty() ? std::string("?") : input.dimParams[i];
    }
  }
  return s + "]";
}

std::map<TensorId, TensorInfo> bindInputShapes(const std::vector<ir::DeclaredInput>& inputs,
                                               const std::map<TensorId, TensorInfo>& samples,
                                               int64_t microBatch, const std::string& modelName,
                                               const std::string& dataName) {
  std::map<TensorId, TensorInfo> bound;
  for (const ir::DeclaredInput& in : inputs) {
    if (in.type == DataType::UNDEFINED) {
      throw error("input '{}' of '{}' has no element type; xtrain cannot tell what to feed it",
                  in.id, modelName);
    }
    const auto data = samples.find(in.id);
    if (data == samples.end()) {
      throw error("'{}' has no dataset '{}' for the model's input '{}'", dataName, in.id, in.id);
    }
    const Shape& dataShape = data->second.shape();
    const std::string modelShape = declaredShapeString(in);
    if (in.hasShape && in.dims.empty()) {
      throw error("input '{}' of '{}' is a scalar; xtrain needs a batch dimension", in.id,
                  modelName);
    }
    if (in.hasShape && in.dims.size() != dataShape.size()) {
      throw error(
          "input '{}' of '{}' has shape {} ({} dimensions, the first one the batch), but "
          "dataset '{}' in '{}' is {} ({} dimensions, the first one the samples)",
          in.id, modelName, modelShape, in.dims.size(), in.id, dataName, shapeToString(dataShape),
          dataShape.size());
    }
    Shape shape{microBatch};
    for (size_t i = 1; i < dataShape.size(); ++i) {
      const int64_t declared = in.hasShape ? in.dims[i] : -1;
      if (declared >= 0 && declared != dataShape[i]) {
        ir::DeclaredInput sample = in;
        sample.dims.erase(sample.dims.begin());
        sample.dimParams.erase(sample.dimParams.begin());
        throw error(
            "input '{}' of '{}' has shape {}, so dataset '{}' in '{}' must hold samples of shape "
            "{}; it holds samples of shape {} (dimension {} is {} in the model, {} in the data)",
            in.id, modelName, modelShape, in.id, dataName, declaredShapeString(sample),
            shapeToString(Shape(dataShape.begin() + 1, dataShape.end())), i, declared,
            dataShape[i]);
      }
      shape.push_back(dataShape[i]);
    }
    bound.emplace(in.id, TensorInfo(in.type, shape));
  }
  return bound;
}

}  // namespace xtrain::tools
