// What differs between the optimizer families inside the optimizer transform: the update op, its
// attributes, the state tensors every weight keeps, and the rule's hyperparameter values. The
// generic part (accumulation, shards, hyper tensors) is in optimizer_transform.cpp.
#pragma once
#pragma GCC visibility push(default)

#include <string>
#include <vector>

#include "common/attributes.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain::ir {

struct StateSlotSpec {
  std::string slot;    // checkpoint slot name (docs/optimizers.md section 8)
  std::string prefix;  // PopART's tensor prefix: Accl, Accl1, Accl2, Accl3, Step
  bool perElement = true;
  DataType type = DataType::UNDEFINED;  // FLOAT, FLOAT16, or UNDEFINED: the weight's type
  float initialValue = 0.0f;            // every element's value before the first update
};

struct UpdateRule {
  std::string opType;  // SGDUpdate, AdamUpdate, AdaptiveUpdate
  Attributes attrs;
  // The state of every weight, in the order the update op takes it after (weight, grad, hyper).
  // Optional slots that a mode does not keep are absent; `inputSlots` gives the op input index of
  // each.
  std::vector<StateSlotSpec> slots;
  std::vector<size_t> inputSlots;
  bool lamb = false;                         // the update needs norms over the whole weight
  DataType accumType = DataType::UNDEFINED;  // the gradient accumulator's (UNDEFINED: the weight's)
};

// The family's update op and state; throws xtrain::error for settings the transform cannot honour.
UpdateRule updateRuleOf(const Optimizer& optimizer);

// The attributes of one weight's update op: the rule's, and those a weight may have of its own
// (SGD's nesterov, fixed when the session is built).
Attributes updateAttrsOf(const Optimizer& optimizer, const UpdateRule& rule,
                         const TensorId& weight);

// The whole hyper tensor of one weight's update op, built by name in its family's layout
// (common/optimizer_hyper.hpp): the given gradient scale, a clipping factor of 1, and the rule's
// values for the weight.
std::vector<float> hyperTensorOf(const Optimizer& optimizer, const TensorId& weight,
                                 float gradScale);

// "SGD", "Adam(Lamb, Decay)", "Adaptive(RMSProp, L2Regularization)": the family and its fixed
// modes.
std::string describeOptimizer(const Optimizer& optimizer);

// Throws when `next` may not replace `current` in a built session: another family, mode,
// weight-decay mode, a weight's nesterov, or state that the session did not create (momentum).
void checkRuleReplacement(const Optimizer& current, const Optimizer& next,
                          const std::vector<TensorId>& weights);

}  // namespace xtrain::ir

#pragma GCC visibility pop
