// ONNX schemas for custom ops (include/xtrain/customop.hpp): registered from a custom op's
// definition so that the ONNX checker knows the node and ONNX shape inference (the Builder's
// getTensorShape) sees through it. Does not include ONNX headers: src/session/ calls it.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <string>
#include <vector>

#include "common/attributes.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::ir::onnxutil {

struct CustomSchemaSpec {
  std::string domain;
  std::string type;
  int version = 1;
  int minInputs = 1;
  int maxInputs = 1;  // -1: variadic
  int numOutputs = 1;
  std::vector<std::string> attributeNames;  // passed to infer when the node has them
  // Output infos from input infos (unset when unknown) and attributes; throws xtrain::error.
  std::function<std::vector<TensorInfo>(const std::vector<TensorInfo>&, const Attributes&)> infer;
};

// Registers the schema (domain `domain`, since `version`); adds the domain to ONNX's domain
// version ranges when ONNX does not know it. Throws xtrain::error when ONNX refuses (a schema of
// that name exists, or the domain's known range does not include `version`).
void registerCustomSchema(const CustomSchemaSpec& spec);

}  // namespace xtrain::ir::onnxutil

#pragma GCC visibility pop
