// Optimizers with PopART's names: OptimizerValue, SGD, ConstSGD.
//
// SGD's update for weight w with gradient g (PopART's documented rule; g is the gradient of the loss, i.e.
// already divided by the loss scaling factor ls and by af·G for a Mean-Post reduction):
//   momentum mm == 0 everywhere:  w <- w - lr * (g + wd * w)
//   otherwise (velocity v, stored multiplied by the velocity scaling vs):
//     v <- mm * v + (1 - dm) * vs * (g + wd * w)
//     nesterov: w <- w - (lr / vs) * (vs * (g + wd * w) + mm * v)   else: w <- w - (lr / vs) * v
// lr learning rate, wd weight decay, dm dampening. With dm = 0 and vs = 1 this equals PyTorch's SGD.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/names.hpp"

namespace xtrain {

// A hyperparameter value and whether it is constant for the session's lifetime (compiled in) or may be
// changed with updateOptimizerFromHost.
class OptimizerValue {
 public:
  OptimizerValue() = default;
  OptimizerValue(float v) : val_(v), isConst_(true) {}  // NOLINT: PopART converts floats implicitly
  OptimizerValue(float v, bool isConst) : val_(v), isConst_(isConst) {}
  explicit OptimizerValue(std::pair<float, bool> p) : val_(p.first), isConst_(p.second) {}

  float val() const { return val_; }
  bool isConst() const { return isConst_; }
  bool operator==(const OptimizerValue&) const = default;

 private:
  float val_ = 0.0f;
  bool isConst_ = true;
};

enum class OptimizerType { SGD = 0, Adam, Adaptive };

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual OptimizerType type() const = 0;
  virtual std::string type_s() const = 0;
  virtual std::unique_ptr<Optimizer> clone() const = 0;
  const OptimizerValue& lossScaling() const { return lossScaling_; }
  float getLossScalingVal() const { return lossScaling_.val(); }

 protected:
  OptimizerValue lossScaling_{1.0f, true};
};

class SGD : public Optimizer {
 public:
  // The names PopART's map constructor accepts.
  static const std::vector<std::string>& hyperParameterNames();

  SGD(OptimizerValue defaultLearningRate = OptimizerValue(0.1f, false),
      OptimizerValue defaultWeightDecay = OptimizerValue(0.0f, true),
      OptimizerValue defaultMomentum = OptimizerValue(0.0f, true),
      OptimizerValue defaultDampening = OptimizerValue(0.0f, true),
      OptimizerValue defaultVelocityScaling = OptimizerValue(1.0f, true),
      OptimizerValue lossScaling = OptimizerValue(1.0f, true), bool nesterov = false);

  // PopART's map form: {"defaultLearningRate", {0.01, false}}, {"defaultMomentum", {0.9, true}}, ...
  // Keys: defaultLearningRate, defaultWeightDecay, defaultMomentum, defaultDampening,
  // defaultVelocityScaling, lossScaling, nesterov (value != 0 enables). Unknown keys throw xtrain::error.
  explicit SGD(const std::map<std::string, std::pair<float, bool>>& params);

  // Per-weight values overriding the defaults. Keys: learningRate, weightDecay, momentum, dampening,
  // velocityScaling.
  void insertSpecific(const TensorId& weight, const std::map<std::string, std::pair<float, bool>>& params);
  bool hasSpecific(const TensorId& weight) const { return specific_.count(weight) != 0; }

  OptimizerType type() const override { return OptimizerType::SGD; }
  std::string type_s() const override { return "SGD"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<SGD>(*this); }

  struct Values {
    OptimizerValue learningRate;
    OptimizerValue weightDecay;
    OptimizerValue momentum;
    OptimizerValue dampening;
    OptimizerValue velocityScaling;
  };
  // The values in force for one weight (specific values, else the defaults).
  Values valuesFor(const TensorId& weight) const;
  const Values& defaults() const { return defaults_; }
  bool nesterov() const { return nesterov_; }
  // True when any weight may have a non-zero momentum (then every weight keeps a velocity tensor).
  bool requiresVelocity() const;

 private:
  static void apply(Values& v, const std::string& key, std::pair<float, bool> value);
  void validate() const;

  Values defaults_;
  std::map<TensorId, Values> specific_;
  bool nesterov_ = false;
};

// SGD whose every value is constant.
class ConstSGD : public SGD {
 public:
  ConstSGD(float learningRate, float weightDecay = 0.0f, float momentum = 0.0f,
           float dampening = 0.0f, float velocityScaling = 1.0f, float lossScaling = 1.0f)
      : SGD(OptimizerValue(learningRate, true), OptimizerValue(weightDecay, true),
            OptimizerValue(momentum, true), OptimizerValue(dampening, true),
            OptimizerValue(velocityScaling, true), OptimizerValue(lossScaling, true)) {}
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<ConstSGD>(*this); }
};

}  // namespace xtrain
