// The parts of registerGraphcoreSchemas (graphcore_schemas.cpp) that live in files of their own,
// and the start of every ai.graphcore schema they make. Includes ONNX's headers: include only from
// src/ir/onnx/.
#pragma once

#include <onnx/defs/schema.h>

#pragma GCC visibility push(default)

namespace xtrain::ir::onnxutil {

// A schema named `name` in ai.graphcore, version 1, with its doc string.
onnx::OpSchema graphcoreSchema(const char* name, const char* doc);
// Shape inference of a binary elementwise op: input 0's type, the numpy broadcast of inputs 0 and 1
// when both shapes are known.
void broadcastInference(onnx::InferenceContext& ctx);
// Registers `name`: one FLOAT or FLOAT16 input, an output of its type and shape.
void registerFloatUnarySchema(const char* name, const char* doc);

void registerSortAndRandomSchemas();   // graphcore_schemas_sort.cpp
void registerCallSchema();             // call_schema.cpp
void registerGraphcoreUnarySchemas();  // graphcore_schemas_unary.cpp
void registerGraphcoreMiscSchemas();   // graphcore_schemas_misc.cpp
void registerCtcAndMultiConvSchemas();  // graphcore_schemas_ctc.cpp

}  // namespace xtrain::ir::onnxutil

#pragma GCC visibility pop
