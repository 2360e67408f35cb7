// Which ops xtrain supports, as PopART's OpManager answers it (popart.getSupportedOperations and
// its companions in Python).
//
// An op is listed once per version of its domain's opset that defines it, as PopART lists each
// OperatorIdentifier it registers: ai.onnx ops at each version ONNX gave them between opset 6 and
// 17 (Add-6, Add-7, Add-13, Add-14), ai.graphcore ops at version 1, custom ops
// (xtrain/customop.hpp) at the version they were registered with. The public list holds the
// ai.onnx and ai.graphcore ops a model may use (docs/operators.md), the ops the importer handles
// itself (Constant, Call, If, Loop, Scan) and custom ops; includePrivate adds xtrain's internal
// ops (domain ai.xtrain: gradient, optimizer and copy ops), as PopART adds its non-public ones.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/operatoridentifier.hpp"

namespace xtrain {

// An op's inputs, outputs and attributes. The types are those its ONNX schema allows (xtrain's
// kernels compute in fewer for some ops; the import names an input they refuse), and each
// attribute's supportedValuesRegex is ".*": xtrain checks values when a model is loaded.
struct XTRAIN_API OpDefinition {
  struct XTRAIN_API Input {
    std::string name;
    std::vector<DataType> supportedTensors;
    bool constant = false;  // the value must be known when the model is loaded
  };
  struct XTRAIN_API Output {
    std::string name;
    std::vector<DataType> supportedTensors;
  };
  struct XTRAIN_API Attribute {
    std::string supportedValuesRegex;
  };
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  std::map<std::string, Attribute> attributes;
};

using OpDefinitions = std::map<OperatorIdentifier, OpDefinition>;

class XTRAIN_API OpManager {
 public:
  // Every op version xtrain supports (see the header's comment), sorted.
  static std::vector<OperatorIdentifier> getSupportedOperations(bool includePrivate);
  // The ai.onnx ops of opset `opsetVersion` (each at the version ONNX defined it by then) that
  // xtrain does not support. Throws xtrain::error for an opset outside 6 to 17.
  static std::vector<OperatorIdentifier> getUnsupportedOperations(int opsetVersion);
  // getSupportedOperations with each op's definition, from its ONNX schema.
  static OpDefinitions getSupportedOperationsDefinition(bool includePrivate);
};

}  // namespace xtrain
