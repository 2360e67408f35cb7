// ai.graphcore PackedDataBlock (PopART's Builder packedDataBlock) inlined at import.
//
// Inputs: for each of K packed inputs its data [rows, ...], offsets [S] and lengths [S] (sequence s
// is rows offsets[s] .. offsets[s] + lengths[s] - 1), then the result's offsets [S] and lengths
// [S]; attributes maxSequenceLengths (K values), resultSize and callbackBatchSize, and the graph
// `callback`. Each input is unpacked to [S, maxSequenceLength, ...], the rows after a sequence's
// length zero; the callback runs on callbackBatchSize sequences at a time ([B, maxLength, ...] per
// input) and returns [B, L, ...]; the first resultLengths[s] rows of sequence s's result (at most
// L) are packed at resultOffsets[s] of the output [resultSize, ...], whose other rows are zero.
// Where result sequences overlap, the later sequence's rows are kept (as if written in order).
//
// The inlined form gathers rows by index (offsets and lengths are known only at run time):
// unpacking is a Gather of offsets[s] + j, masked where j >= lengths[s]; packing a Gather, for each
// output row r, of the result row of the last sequence covering r, masked where none does.
// Gradients follow from Gather's and Where's.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/onnx/inliner.hpp"
#include "ir/placement/placement.hpp"

namespace xtrain::ir::onnximport {

namespace {

Attributes axisAttr(int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return a;
}

// A rank-1 integer tensor of `count` elements (offsets or lengths), as INT64 of shape `shape`.
TensorId indexInput(Inliner& in, const TensorId& id, const char* what, size_t k, int64_t count,
                    const Shape& shape) {
  const TensorInfo& info = in.info(id);
  if (!isInteger(info.dataType()) || info.shape().size() != 1 || info.shape()[0] != count) {
    in.fail("input {} ({}) is {}, expected an integer tensor of shape [{}] (one value a sequence)",
            k, what, info.toString(), count);
  }
  Attributes to;
  to.set("to", int64_t{dataTypeToOnnx(DataType::INT64)});
  const TensorId wide = info.dataType() == DataType::INT64 ? id : in.op("Cast", {id}, to);
  return in.reshape(wide, shape);
}

std::vector<int64_t> iota(int64_t n, int64_t step = 1) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i * step;
  return v;
}

// A BOOL mask [a, b] reshaped to broadcast over a tensor of `rank` dimensions.
TensorId broadcastMask(Inliner& in, const TensorId& mask, size_t rank) {
  Shape shape = in.info(mask).shape();
  shape.resize(rank, 1);
  return in.reshape(mask, shape);
}

TensorId zeroOf(Inliner& in, DataType type) {
  return in.constant(HostTensor(TensorInfo(type, {})), "zero");
}

// data [rows, ...] -> [S, maxLength, ...]: row j of sequence s is data[offsets[s] + j] while
// j < lengths[s], else zero.
TensorId unpack(Inliner& in, const std::vector<TensorId>& inputs, size_t k, int64_t sequences,
                int64_t maxLength) {
  const TensorId& data = inputs[3 * k];
  const TensorInfo info = in.info(data);  // a copy: the ops added below add tensors
  if (info.shape().empty()) in.fail("input {} (data) is a scalar; it needs rows to unpack", 3 * k);
  const TensorId offsets =
      indexInput(in, inputs[3 * k + 1], "offsets", 3 * k + 1, sequences, {sequences, 1});
  const TensorId lengths =
      indexInput(in, inputs[3 * k + 2], "lengths", 3 * k + 2, sequences, {sequences, 1});
  const TensorId position = in.int64Constant(iota(maxLength), {1, maxLength}, "position");
  const TensorId inside = in.op("Less", {position, lengths});  // [S, maxLength]
  const TensorId row = in.op("Add", {offsets, position});
  // Rows past a sequence's end read row 0, then are zeroed.
  const TensorId safeRow = in.op("Where", {inside, row, zeroOf(in, DataType::INT64)});
  const TensorId gathered = in.op("Gather", {data, safeRow}, axisAttr(0));
  return in.op("Where", {broadcastMask(in, inside, info.shape().size() + 1), gathered,
                         zeroOf(in, info.dataType())});
}

// results [S, L, ...] -> [resultSize, ...] (see the file's comment).
TensorId pack(Inliner& in, const TensorId& results, const TensorId& resultOffsets,
              const TensorId& resultLengths, size_t firstIndex, int64_t resultSize) {
  const Shape shape = in.info(results).shape();
  const DataType type = in.info(results).dataType();
  const int64_t sequences = shape[0], length = shape[1];
  Shape flatShape(shape.begin() + 1, shape.end());
  flatShape[0] = sequences * length;
  const TensorId flat = in.reshape(results, flatShape);
  const TensorId offsets =
      indexInput(in, resultOffsets, "result offsets", firstIndex, sequences, {1, sequences});
  const TensorId lengths = in.op("Min", {indexInput(in, resultLengths, "result lengths",
                                                    firstIndex + 1, sequences, {1, sequences}),
                                         in.int64Constant({length}, {}, "length")});
  const TensorId outRow = in.int64Constant(iota(resultSize), {resultSize, 1}, "row");
  const TensorId covers =
      in.op("And", {in.op("GreaterOrEqual", {outRow, offsets}),
                    in.op("Less", {outRow, in.op("Add", {offsets, lengths})})});  // [R, S]
  // Result row of sequence s for output row r: s * L + r - offsets[s], increasing in s.
  const TensorId firstRow =
      in.op("Sub", {in.int64Constant(iota(sequences, length), {1, sequences}, "first"), offsets});
  const TensorId candidate = in.op("Add", {outRow, firstRow});
  const TensorId none = in.int64Constant({-1}, {}, "none");
  Attributes reduce;  // opset 13's ReduceMax: axes an attribute
  reduce.set("axes", std::vector<int64_t>{1});
  reduce.set("keepdims", int64_t{0});
  const TensorId source =
      in.op("ReduceMax", {in.op("Where", {covers, candidate, none})}, reduce);  // [R]
  const TensorId covered = in.op("GreaterOrEqual", {source, in.int64Constant({0}, {}, "zero")});
  const TensorId safeSource = in.op("Where", {covered, source, zeroOf(in, DataType::INT64)});
  const TensorId gathered = in.op("Gather", {flat, safeSource}, axisAttr(0));
  return in.op("Where", {broadcastMask(in, covered, flatShape.size()), gathered, zeroOf(in, type)});
}

}  // namespace

void inlinePackedDataBlock(Inliner& in, const std::vector<TensorId>& inputs,
                           const std::vector<TensorId>& outputs) {
  const onnx::NodeProto& node = in.node();
  const onnx::GraphProto& callback = in.graphAttr("callback");
  if (inputs.size() < 5 || (inputs.size() - 2) % 3 != 0) {
    in.fail(
        "has {} inputs; expected data, offsets and lengths for each packed input, then the "
        "result's offsets and lengths (3 x K + 2 inputs, K >= 1)",
        inputs.size());
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].empty()) in.fail("input {} is absent; every input is required", k);
  }
  const size_t packed = (inputs.size() - 2) / 3;
  const std::vector<int64_t> maxLengths = intsAttr(node, "maxSequenceLengths");
  const int64_t resultSize = intAttr(node, "resultSize", -1);
  const int64_t batch = intAttr(node, "callbackBatchSize", -1);
  if (maxLengths.size() != packed) {
    in.fail("maxSequenceLengths has {} values, expected one for each of the {} packed inputs",
            maxLengths.size(), packed);
  }
  for (int64_t m : maxLengths) {
    if (m < 1) in.fail("maxSequenceLengths has {}; every maximum length must be at least 1", m);
  }
  if (resultSize < 0) in.fail("resultSize is {}, expected a size of 0 or more", resultSize);
  const TensorInfo& offsets0 = in.info(inputs[1]);
  if (offsets0.shape().size() != 1) {
    in.fail("input 1 (offsets) is {}, expected one value a sequence", offsets0.toString());
  }
  const int64_t sequences = offsets0.shape()[0];
  if (batch < 1 || sequences % batch != 0) {
    in.fail("callbackBatchSize is {}; it must divide the {} sequences", batch, sequences);
  }
  if (callback.input_size() != static_cast<int>(packed) || callback.output_size() != 1 ||
      outputs.size() != 1) {
    in.fail(
        "the callback has {} inputs and {} outputs, the op {} packed inputs and {} outputs; "
        "expected one callback input a packed input, and one output",
        callback.input_size(), callback.output_size(), packed, outputs.size());
  }
  // The ops added here run where the node is placed (the callback's own ops where theirs are).
  const OpId firstNew = nextOpId(in.imp().graph);
  Placement placement;
  placement.virtualGraph = intAttr(node, kVirtualGraphAttribute, Placement::kNone);
  placement.pipelineStage = intAttr(node, kPipelineStageAttribute, Placement::kNone);
  std::vector<TensorId> unpacked;
  for (size_t k = 0; k < packed; ++k) {
    unpacked.push_back(unpack(in, inputs, k, sequences, maxLengths[k]));
  }
  std::vector<TensorId> results;
  for (int64_t c = 0; c < sequences / batch; ++c) {
    const TensorId rows = in.int64Constant(iota(batch), {batch}, "rows");
    const TensorId first = in.int64Constant({c * batch}, {}, "first");
    const TensorId picked = in.op("Add", {rows, first});
    std::vector<TensorId> args;
    for (const TensorId& u : unpacked) args.push_back(in.op("Gather", {u, picked}, axisAttr(0)));
    const TensorId r = in.instantiate(callback, args, "call" + std::to_string(c))[0];
    const Shape s = in.info(r).shape();
    if (s.size() < 2 || s[0] != batch) {
      in.fail(
          "the callback's output is {}; expected [{}, sequence length, ...] (one row a "
          "sequence of the batch)",
          in.info(r).toString(), batch);
    }
    results.push_back(r);
  }
  const TensorId all = results.size() == 1 ? results[0] : in.op("Concat", results, axisAttr(0));
  in.writeOutputs(
      {pack(in, all, inputs[3 * packed], inputs[3 * packed + 1], 3 * packed, resultSize)}, outputs);
  inheritPlacement(in.imp().graph, firstNew, placement);
}

}  // namespace xtrain::ir::onnximport
