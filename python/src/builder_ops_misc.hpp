// The op builders of python/src/builder_ops_misc.cpp: PopART's ai.graphcore atan2, swish, geluerf,
// nearbyint, incrementmod, slice, subsample, groupedgather, sequenceslice and normalize_image, and
// ai.onnx mean, added to the classes builder_ops.cpp binds.
#pragma once

#include <pybind11/pybind11.h>

#include "xtrain/builder.hpp"

namespace xtrain::python {

void bindAiOnnx11Misc(pybind11::class_<AiOnnxOpset11>& c);
void bindAiGraphcoreMisc(pybind11::class_<AiGraphcoreOpset1>& c);
// python/src/builder_ops_ctc.cpp: ctcloss, _ctcloss, ctcbeamsearchdecoder, multiconv.
void bindAiGraphcoreCtcMultiConv(pybind11::class_<AiGraphcoreOpset1>& c);

}  // namespace xtrain::python
