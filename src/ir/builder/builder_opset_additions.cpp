// AiGraphcoreOpset1Additions: the ai.graphcore PackedDataBlock node (inlined at import by
// src/ir/onnx/packed_data_import.cpp) and CopyVarUpdate (src/ir/ops/graphcore_ops.cpp).
#include "xtrain/builder_opset_additions.hpp"

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

TensorId AiGraphcoreOpset1Additions::packedDataBlock(const std::vector<TensorId>& args,
                                                     const std::vector<int64_t>& maxSequenceLengths,
                                                     int64_t resultSize, int64_t callbackBatchSize,
                                                     Builder& callback,
                                                     const std::string& debugContext) {
  // What the Builder knows now; the shapes are checked at import.
  if (args.size() < 5 || (args.size() - 2) % 3 != 0) {
    throw error(
        "Builder: packedDataBlock: {} inputs; expected data, offsets and lengths for each packed "
        "input, then the result's offsets and lengths (3 x K + 2 inputs, K >= 1)",
        args.size());
  }
  if (maxSequenceLengths.size() != (args.size() - 2) / 3) {
    throw error(
        "Builder: packedDataBlock: maxSequenceLengths has {} values, expected one for each of "
        "the {} packed inputs",
        maxSequenceLengths.size(), (args.size() - 2) / 3);
  }
  if (resultSize < 0 || callbackBatchSize < 1) {
    throw error(
        "Builder: packedDataBlock: resultSize is {} and callbackBatchSize {}; expected a size of "
        "0 or more and a batch of 1 or more",
        resultSize, callbackBatchSize);
  }
  onnx::GraphProto g = impl_->subgraphOf(BuilderImpl::of(callback), "packedDataBlock");
  auto e = impl_->emit("PackedDataBlock", ir::kGraphcoreDomain, args, 1, debugContext);
  setIntAttr(*e.node, "resultSize", resultSize);
  setIntAttr(*e.node, "callbackBatchSize", callbackBatchSize);
  setIntsAttr(*e.node, "maxSequenceLengths", maxSequenceLengths);
  setGraphAttr(*e.node, "callback", std::move(g));
  return e.outputs[0];
}

TensorId AiGraphcoreOpset1Additions::copyvarupdate(const std::vector<TensorId>& args,
                                                   const std::string& debugContext) {
  BuilderImpl::checkArity("copyvarupdate", "CopyVarUpdate", args, 2, 2);
  return impl_->emit1("CopyVarUpdate", args, debugContext, ir::kGraphcoreDomain);
}

}  // namespace xtrain
