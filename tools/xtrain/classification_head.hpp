// Finds the classification loss behind a model's loss tensor, so that validation can report top-1
// accuracy: the scores and labels of the SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss or
// ai.graphcore Nll that the loss is computed from.
#pragma once

#include <optional>
#include <string>

#include "xtrain/names.hpp"

namespace xtrain::tools {

struct ClassificationHead {
  std::string opType;  // SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss or Nll
  TensorId scores;     // [N, C, d1...]: logits, probabilities or log-probabilities
  TensorId labels;     // [N, d1...] integer class indices
  std::optional<int64_t> ignoreIndex;
};

// `modelBytes` is a serialized ONNX ModelProto. Walks back from `loss` through the nodes that
// compute it (at most a few nodes deep: a mean, a scale, an Identity, an added regulariser) and
// returns the one classification loss found there; nullopt when there is none or more than one
// (accuracy is then not defined). Never throws for a model the session accepted; a model whose
// bytes are not a ModelProto gives nullopt.
std::optional<ClassificationHead> findClassificationHead(const std::string& modelBytes,
                                                         const TensorId& loss);

}  // namespace xtrain::tools
