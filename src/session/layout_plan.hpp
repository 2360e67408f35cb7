// Which activations of a lowered graph are stored channels-last (NHWC) instead of plain (NCHW).
//
// oneDNN's convolutions run on channels-last or blocked layouts; with every buffer plain, each
// Conv, ConvGradInput and ConvGradWeight reordered its activations in and out, about a quarter of
// oneDNN's time in a ResNet-style CNN. Keeping the tensors between convolutions, BatchNorm, Relu
// and the residual Add/Sum channels-last removes those reorders. NHWC rather than a blocked layout
// (nChw16c) because it is a permutation of the plain layout: the same size, so elementwise kernels
// run on it unchanged, and any channel count works without padding.
//
// A tensor is channels-last only when all of these hold:
//  - it is a rank-4 FLOAT activation (produced by an op; not a weight, input, constant, optimizer
//    state, graph output, or a tensor the host reads: anchors, the loss);
//  - every op that produces or reads it accepts a channels-last tensor in that place
//    (layoutAwareSlot: the activation slots of Conv, ConvGradInput, ConvGradWeight,
//    BatchNormalization, BatchNormGrad), or is an elementwise op (Relu, ReluGrad, Add, Sum) whose
//    inputs and output all have its shape; the tensors of one such elementwise op share a layout,
//    so they are chosen together, all or none.
// A recomputation clone's outputs (ir::Op::recomputes) are chosen together with its original's.
// Everything else is plain, so kernels that know nothing of layouts never see a channels-last
// buffer; conversions happen inside the layout-aware kernels, at the edges of the region.
#pragma once
#pragma GCC visibility push(default)

#include <set>

#include "device/kernel.hpp"
#include "ir/graph.hpp"

namespace xtrain::session {

// The channels-last tensors of `graph`; `hostRead` are tensors the host reads besides the graph's
// outputs (anchors), which stay plain.
std::set<TensorId> channelsLastTensors(const ir::Graph& graph, const std::set<TensorId>& hostRead);

// Whether sessions lower with channels-last activations: yes unless XTRAIN_LAYOUT=plain (for
// comparing the two, and a way out should a layout-aware kernel misbehave).
bool channelsLastFromEnvironment();

// Whether input (`output` false) or output `slot` of `op` may be channels-last whatever the
// layouts of the op's other tensors.
bool layoutAwareSlot(const ir::Op& op, size_t slot, bool output);

// Whether `op` is elementwise over tensors of one shape, so that it runs unchanged when all its
// tensors share one layout.
bool layoutAgnosticElementwise(const ir::Graph& graph, const ir::Op& op);

}  // namespace xtrain::session

#pragma GCC visibility pop
