// AiGraphcoreOpset1Additions: methods of PopART's AiGraphcoreOpset1 added after
// builder_opsets.hpp (included nearly everywhere) was settled: packedDataBlock and copyvarupdate.
// Made from an AiGraphcoreOpset1 it emits into the same Builder:
//
//   AiGraphcoreOpset1Additions(builder.aiGraphcoreOpset1()).packedDataBlock(...)
//
// Python: builder.aiGraphcore.packedDataBlock(...) and .copyvarupdate(...), PopART's signatures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/builder_opsets.hpp"

namespace xtrain {

class XTRAIN_API AiGraphcoreOpset1Additions : public AiGraphcoreOpset1 {
 public:
  explicit AiGraphcoreOpset1Additions(const AiGraphcoreOpset1& ops) : AiGraphcoreOpset1(ops) {}

  // PopART's PackedDataBlock. args: for each packed input its data [rows, ...], offsets [S] and
  // lengths [S] (integer tensors: sequence s is rows offsets[s] to offsets[s] + lengths[s] - 1),
  // then the result's offsets [S] and lengths [S]. Each input is unpacked to
  // [S, maxSequenceLengths[k], ...] (zero after a sequence's end); `callback` (a Builder from
  // createSubgraphBuilder, one untyped input a packed input, one output) runs on
  // callbackBatchSize sequences at a time and returns [callbackBatchSize, L, ...]; the first
  // resultLengths[s] rows of sequence s's result are written at resultOffsets[s] of the output
  // [resultSize, ...] (other rows zero). Checked when the model is imported (docs/operators.md).
  TensorId packedDataBlock(const std::vector<TensorId>& args,
                           const std::vector<int64_t>& maxSequenceLengths, int64_t resultSize,
                           int64_t callbackBatchSize, Builder& callback,
                           const std::string& debugContext = {});

  // PopART's CopyVarUpdate: args = {variable, updater} of one type and shape. The output is the
  // updater's value, and in a TrainingSession the variable (a weight, which is then not trained)
  // takes that value after each micro-batch's backward pass, as BatchNormalization's running
  // statistics do; in an InferenceSession after each micro-batch's forward pass (PopTorch's
  // buffers that forward updates), but for a pipelined one, which refuses it.
  TensorId copyvarupdate(const std::vector<TensorId>& args, const std::string& debugContext = {});
};

}  // namespace xtrain
