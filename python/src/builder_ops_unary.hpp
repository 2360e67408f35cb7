// The op builders of python/src/builder_ops_unary.cpp: the elementwise and layout ops (trig,
// Expm1/Log1p, Round, Shrink, LRN, DepthToSpace/SpaceToDepth, the bitwise ops) added to the classes
// builder_ops.cpp binds.
#pragma once

#include <pybind11/pybind11.h>

#include "xtrain/builder.hpp"

namespace xtrain::python {

void bindAiOnnx11Unary(pybind11::class_<AiOnnxOpset11>& c);
void bindAiGraphcoreUnary(pybind11::class_<AiGraphcoreOpset1>& c);

}  // namespace xtrain::python
