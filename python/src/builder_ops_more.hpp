// The op builders of python/src/builder_ops_more.cpp: each adds its opset's further ops to the
// class builder_ops.cpp binds.
#pragma once

#include <pybind11/pybind11.h>

#include "xtrain/builder.hpp"

namespace xtrain::python {

void bindAiOnnx11More(pybind11::class_<AiOnnxOpset11>& c);
void bindAiOnnx12More(pybind11::class_<AiOnnxOpset12, AiOnnxOpset11>& c);
void bindAiOnnx14More(pybind11::class_<AiOnnxOpset14, AiOnnxOpset13>& c);
void bindAiOnnx15More(pybind11::class_<AiOnnxOpset15, AiOnnxOpset14>& c);

}  // namespace xtrain::python
