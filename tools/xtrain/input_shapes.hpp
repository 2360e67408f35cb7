// The shapes xtrain feeds a model's inputs with, bound before the session is created.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/onnx/onnx_import.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::tools {

// Per-micro-batch shape of every model input: dimension 0 is `microBatch` (xtrain feeds
// micro-batches, whatever batch the model was exported with, fixed or symbolic); the other
// dimensions are the model's, and those it leaves open (symbolic like 'seq', or unset) are the data
// set's sample dimensions. `samples` holds each input's data set info ([samples] + sample shape).
// Throws xtrain::error (a usage error) naming the input, the model's shape and the data's when a
// fixed dimension or the rank differs, when the model declares no element type, or when an input
// is a scalar.
std::map<TensorId, TensorInfo> bindInputShapes(const std::vector<ir::DeclaredInput>& inputs,
                                               const std::map<TensorId, TensorInfo>& samples,
                                               int64_t microBatch, const std::string& modelName,
                                               const std::string& dataName);

// "[batch,3,32,32]": a declared shape as the model writes it ('?' for an unnamed open dimension).
std::string declaredShapeString(const ir::DeclaredInput& input);

}  // namespace xtrain::tools
