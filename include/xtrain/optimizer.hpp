// Optimizers with PopART's names: OptimizerValue, ClipNormSettings, SGD, ConstSGD, Adam, Adaptive.
//
// The update rules are specified, with their sources, in docs/optimizers.md; each class below gives
// its rule in short. In every rule g is the gradient of the loss for the weight: reduced over
// replicas and micro-batches, divided by the loss scaling factor ls (and by af·G for a Mean-Post
// reduction), then multiplied by the clipping factor of the weight's ClipNormSettings group, if
// any.
//
// SGD's update for weight w:
//   momentum mm == 0 everywhere:  w <- w - lr * (1 - dm) * (g + wd * w)   (PopART's "SGD0")
//   otherwise (velocity v, stored multiplied by the velocity scaling vs):
//     v <- mm * v + (1 - dm) * vs * (g + wd * w)
//     nesterov: w <- w - (lr / vs) * (vs * (g + wd * w) + mm * v)   else: w <- w - (lr / vs) * v
// lr learning rate, wd weight decay, dm dampening. With dm = 0 and vs = 1 this equals PyTorch's
// SGD. Nesterov is a hyperparameter of each weight like the others (PopART's OptimizerValue
// nesterov, non-zero enables), fixed when the session is built.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/names.hpp"

namespace xtrain {

// A hyperparameter value and whether it is constant for the session's lifetime (compiled in) or may
// be changed with updateOptimizerFromHost.
class XTRAIN_API OptimizerValue {
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

// Gradient clipping by global norm (docs/optimizers.md section 5). For the weights of one group:
//   n = sqrt(sum over the group's weights and elements of g^2),  g <- g * maxNorm / max(maxNorm, n)
// where g is the reduced, unscaled gradient (before weight decay), so n is the norm of the global
// gradient whatever the replicas and shards. An optimizer takes a list of groups; clipAllWeights
// must then be the only one.
class XTRAIN_API ClipNormSettings {
 public:
  enum class Mode { ClipSpecifiedWeights, ClipAllWeights };

  static ClipNormSettings clipWeights(const std::vector<TensorId>& weightIds, float maxNorm);
  static ClipNormSettings clipAllWeights(float maxNorm);

  const std::vector<TensorId>& getWeightIds() const { return weightIds_; }
  float getMaxNorm() const { return maxNorm_; }
  Mode getMode() const { return mode_; }
  bool operator==(const ClipNormSettings&) const = default;

 private:
  ClipNormSettings(std::vector<TensorId> ids, float maxNorm, Mode mode)
      : weightIds_(std::move(ids)), maxNorm_(maxNorm), mode_(mode) {}
  std::vector<TensorId> weightIds_;
  float maxNorm_ = 0.0f;
  Mode mode_ = Mode::ClipSpecifiedWeights;
};

// How weight decay enters an adaptive update: Decay adds wd * w to the normalised update (AdamW),
// L2Regularization adds it to the gradient before the moments (Adam's weight_decay in PyTorch).
enum class WeightDecayMode { Decay = 0, L2Regularization };

enum class OptimizerType { SGD = 0, Adam, Adaptive };

// The hyperparameters of one weight: values by PopART's insertSpecific key (learningRate, ...).
using OptimizerValues = std::map<std::string, OptimizerValue>;

class XTRAIN_API Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual OptimizerType type() const = 0;
  virtual std::string type_s() const = 0;
  virtual std::unique_ptr<Optimizer> clone() const = 0;
  const OptimizerValue& lossScaling() const { return lossScaling_; }
  float getLossScalingVal() const { return lossScaling_.val(); }
  const std::vector<ClipNormSettings>& getClipNormSettings() const { return clipNormSettings_; }

  // The insertSpecific keys of this optimizer, in the order of its rule's hyperparameters.
  virtual const std::vector<std::string>& specificKeys() const = 0;
  // The values in force for one weight (its insertSpecific values, else the defaults), by key.
  virtual OptimizerValues valuesOf(const TensorId& weight) const = 0;

 protected:
  // Checks the clipping groups (positive finite norms, clipAllWeights alone, no weight in two
  // groups).
  void setClipNormSettings(std::vector<ClipNormSettings> settings);

  OptimizerValue lossScaling_{1.0f, true};
  std::vector<ClipNormSettings> clipNormSettings_;
};

// How PopART lays out SGD's state when a weight keeps a velocity: Combined, one tensor Accl___<w>
// of the weight's type that gathers the micro-batches' gradients into the velocity (accumType and
// accl1Type are ignored); Separate, a gradient accumulator Accum___<w> of accumType (with
// accumulation) and the velocity Accl1___<w> of accl1Type. Both give the same update rule; xtrain
// keeps its own accumulator of the weight's type in the Combined layout. Without velocity the
// accumulator Accum___<w> has accumType in either layout.
enum class SGDAccumulatorAndMomentum { Combined = 0, Separate };

class XTRAIN_API SGD : public Optimizer {
 public:
  // The names PopART's map constructor accepts.
  static const std::vector<std::string>& hyperParameterNames();

  SGD(OptimizerValue defaultLearningRate = OptimizerValue(0.1f, false),
      OptimizerValue defaultWeightDecay = OptimizerValue(0.0f, true),
      OptimizerValue defaultMomentum = OptimizerValue(0.0f, true),
      OptimizerValue defaultDampening = OptimizerValue(0.0f, true),
      OptimizerValue defaultVelocityScaling = OptimizerValue(1.0f, true),
      OptimizerValue lossScaling = OptimizerValue(1.0f, true),
      OptimizerValue nesterov = OptimizerValue(0.0f, true),
      const std::vector<ClipNormSettings>& clipNormSettings = {});

  // PopART's argument order: the clip groups right after the loss scaling (nesterov off).
  SGD(OptimizerValue defaultLearningRate, OptimizerValue defaultWeightDecay,
      OptimizerValue defaultMomentum, OptimizerValue defaultDampening,
      OptimizerValue defaultVelocityScaling, OptimizerValue lossScaling,
      const std::vector<ClipNormSettings>& clipNormSettings)
      : SGD(defaultLearningRate, defaultWeightDecay, defaultMomentum, defaultDampening,
            defaultVelocityScaling, lossScaling, OptimizerValue(0.0f, true), clipNormSettings) {}

  // PopART's map form: {"defaultLearningRate", {0.01, false}}, {"defaultMomentum", {0.9, true}},
  // ... Keys: defaultLearningRate, defaultWeightDecay, defaultMomentum, defaultDampening,
  // defaultVelocityScaling, lossScaling, nesterov (value != 0 enables). Unknown keys throw
  // xtrain::error.
  explicit SGD(const std::map<std::string, std::pair<float, bool>>& params,
               const std::vector<ClipNormSettings>& clipNormSettings = {});
  // PopART's full map form: the state layout and the state types (FLOAT, FLOAT16, or UNDEFINED
  // for the weight's type; another type throws xtrain::error naming the argument).
  SGD(const std::map<std::string, std::pair<float, bool>>& params,
      const std::vector<ClipNormSettings>& clipNormSettings, SGDAccumulatorAndMomentum accMm,
      DataType accumType = DataType::UNDEFINED, DataType accl1Type = DataType::UNDEFINED);

  // Per-weight values overriding the defaults. Keys: learningRate, weightDecay, momentum,
  // dampening, velocityScaling, nesterov; a key not given takes the default.
  void insertSpecific(const TensorId& weight,
                      const std::map<std::string, std::pair<float, bool>>& params);
  // PopART's positional form: every value of the weight.
  void insertSpecific(const TensorId& weight, OptimizerValue learningRate,
                      OptimizerValue weightDecay, OptimizerValue momentum, OptimizerValue dampening,
                      OptimizerValue velocityScaling, OptimizerValue nesterov);
  bool hasSpecific(const TensorId& weight) const { return specific_.count(weight) != 0; }

  OptimizerType type() const override { return OptimizerType::SGD; }
  std::string type_s() const override { return "SGD"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<SGD>(*this); }
  const std::vector<std::string>& specificKeys() const override;
  OptimizerValues valuesOf(const TensorId& weight) const override;

  struct Values {
    OptimizerValue learningRate;
    OptimizerValue weightDecay;
    OptimizerValue momentum;
    OptimizerValue dampening;
    OptimizerValue velocityScaling;
    OptimizerValue nesterov;  // non-zero: Nesterov momentum
  };
  // The values in force for one weight (specific values, else the defaults).
  Values valuesFor(const TensorId& weight) const;
  const Values& defaults() const { return defaults_; }
  // True when any weight may have a non-zero momentum (then every weight keeps a velocity tensor).
  bool requiresVelocity() const;
  SGDAccumulatorAndMomentum getSGDAccumulatorAndMomentum() const { return accMm_; }
  DataType getSGDAccumType() const { return accumType_; }
  DataType getSGD2Accl1Type() const { return accl1Type_; }

 private:
  static void apply(Values& v, const std::string& key, std::pair<float, bool> value);
  void validate() const;

  Values defaults_;
  std::map<TensorId, Values> specific_;
  SGDAccumulatorAndMomentum accMm_ = SGDAccumulatorAndMomentum::Combined;
  DataType accumType_ = DataType::UNDEFINED;
  DataType accl1Type_ = DataType::UNDEFINED;
};

// SGD whose every value is constant.
class XTRAIN_API ConstSGD : public SGD {
 public:
  ConstSGD(float learningRate, float weightDecay = 0.0f, float momentum = 0.0f,
           float dampening = 0.0f, float velocityScaling = 1.0f, float lossScaling = 1.0f)
      : SGD(OptimizerValue(learningRate, true), OptimizerValue(weightDecay, true),
            OptimizerValue(momentum, true), OptimizerValue(dampening, true),
            OptimizerValue(velocityScaling, true), OptimizerValue(lossScaling, true)) {}
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<ConstSGD>(*this); }
};

// The shared machinery of Adam and Adaptive: defaults and insertSpecific values by key, the mode
// enums, and the state data types.
class XTRAIN_API KeyedOptimizer : public Optimizer {
 public:
  // Per-weight values overriding the defaults; keys as specificKeys(). Unknown keys throw.
  void insertSpecific(const TensorId& weight,
                      const std::map<std::string, std::pair<float, bool>>& params);
  bool hasSpecific(const TensorId& weight) const { return specific_.count(weight) != 0; }
  OptimizerValues valuesOf(const TensorId& weight) const override;
  const OptimizerValues& defaults() const { return defaults_; }
  WeightDecayMode getWeightDecayMode() const { return weightDecayMode_; }
  DataType getAccumType() const { return accumType_; }

 protected:
  // Sets the defaults from PopART's map form ("default" + the capitalised insertSpecific key, and
  // lossScaling; maxWeightNorm also without the prefix). Throws naming an unknown key.
  void applyMap(const std::map<std::string, std::pair<float, bool>>& params);
  virtual void validate() const = 0;
  // Checks every value set (defaults and specifics) with `check(values, where)`.
  void forEachValues(
      const std::function<void(const OptimizerValues&, const std::string&)>& check) const;
  // The checks both families share: learning rate finite, >= 0 and not a constant 0; weight decay
  // >= 0; eps > 0.
  void checkCommonValues(const OptimizerValues& v, const std::string& where) const;
  static DataType checkStateType(DataType t, const char* argument);

  OptimizerValues defaults_;
  std::map<TensorId, OptimizerValues> specific_;
  WeightDecayMode weightDecayMode_ = WeightDecayMode::Decay;
  DataType accumType_ = DataType::UNDEFINED;
};

// The Adam family. For weight w with step count t (incremented before use):
//   L2Regularization: g <- g + wd * w
//   m <- b1 * m + (1 - b1) * g
//   v <- b2 * v + (1 - b2) * g^2             (AdaMax: v <- max(b2 * v, |g|))
//   mh = m / (1 - b1^t)  (AdamNoBias, LambNoBias: mh = m)
//   vh = v / (1 - b2^t)  (AdamNoBias, LambNoBias, AdaMax: vh = v)
//   u = mh / (sqrt(vh) + eps)                  (AdaMax: u = mh / (vh + eps))
//   Decay: u <- u + wd * w
//   Lamb, LambNoBias: r = min(|w|, mwn) / |u| (norms over the whole weight, sharded or not; r = 1
//                     when |w| = 0, |u| = 0 or mwn = 0), else r = 1
//   w <- w - lr * r * u
// State: Accl1___<w> (m), Accl2___<w> (v), Step___<w> (t), and Accum___<w> with accumulation.
enum class AdamMode { Adam = 0, AdamNoBias, AdaMax, Lamb, LambNoBias };

class XTRAIN_API Adam : public KeyedOptimizer {
 public:
  // The names PopART's map constructor accepts.
  static const std::vector<std::string>& hyperParameterNames();

  Adam(OptimizerValue defaultLearningRate, OptimizerValue defaultWeightDecay,
       OptimizerValue defaultBeta1, OptimizerValue defaultBeta2, OptimizerValue defaultEps,
       OptimizerValue lossScaling, OptimizerValue maxWeightNorm, AdamMode adamMode,
       WeightDecayMode weightDecayMode, DataType accumType, DataType accl1Type, DataType accl2Type,
       const std::vector<ClipNormSettings>& clipNormSettings = {},
       bool scaledOptimizerState = false);
  // Without maxWeightNorm (10, constant).
  Adam(OptimizerValue defaultLearningRate, OptimizerValue defaultWeightDecay,
       OptimizerValue defaultBeta1, OptimizerValue defaultBeta2, OptimizerValue defaultEps,
       OptimizerValue lossScaling, AdamMode adamMode, WeightDecayMode weightDecayMode,
       DataType accumType, DataType accl1Type, DataType accl2Type,
       const std::vector<ClipNormSettings>& clipNormSettings = {},
       bool scaledOptimizerState = false);
  // PopART's map form. Keys: defaultLearningRate (default 0.1, non-constant), defaultWeightDecay
  // (0), defaultBeta1 (0.9), defaultBeta2 (0.999), defaultEps (1e-6), defaultMaxWeightNorm or
  // maxWeightNorm (10), lossScaling (1).
  Adam(const std::map<std::string, std::pair<float, bool>>& params, AdamMode adamMode,
       WeightDecayMode weightDecayMode = WeightDecayMode::Decay,
       DataType accumType = DataType::UNDEFINED, DataType accl1Type = DataType::FLOAT,
       DataType accl2Type = DataType::FLOAT,
       const std::vector<ClipNormSettings>& clipNormSettings = {},
       bool scaledOptimizerState = false);

  OptimizerType type() const override { return OptimizerType::Adam; }
  std::string type_s() const override { return "Adam"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<Adam>(*this); }
  // learningRate, weightDecay, beta1, beta2, eps, maxWeightNorm.
  const std::vector<std::string>& specificKeys() const override;

  AdamMode getMode() const { return mode_; }
  DataType getAccl1Type() const { return accl1Type_; }
  DataType getAccl2Type() const { return accl2Type_; }
  bool isLamb() const { return mode_ == AdamMode::Lamb || mode_ == AdamMode::LambNoBias; }

 private:
  void validate() const override;

  AdamMode mode_;
  DataType accl1Type_;
  DataType accl2Type_;
};

// The Adaptive family (PopART's Adaptive). For weight w:
//   L2Regularization: g <- g + wd * w
//   AdaGrad:          v1 <- v1 + g^2;                   x = g / (sqrt(v1) + eps)
//   RMSProp:          v1 <- a * v1 + (1 - a) * g^2;     x = g / (sqrt(v1) + eps)
//   CenteredRMSProp:  v1 as RMSProp; v2 <- a * v2 + (1 - a) * g;  x = g / (sqrt(v1 - v2^2) + eps)
//   AdaDelta:         v1 as RMSProp; x = g * sqrt(v2 + eps) / sqrt(v1 + eps);  v2 <- a * v2 + (1 -
//   a) * x^2 momentum (mm != 0 or non-constant): v3 <- mm * v3 + x; x <- v3 Decay: w <- w - lr * (x
//   + wd * w);   L2Regularization: w <- w - lr * x
// a is alpha. State: Accl1___<w> (v1), Accl2___<w> (v2: CenteredRMSProp, AdaDelta), Accl3___<w>
// (v3). rmspropTFVariant (RMSProp and CenteredRMSProp only), TensorFlow's RMSProp as PopART has it:
// eps inside the square root, x = g / sqrt(v1 + eps) (centered: g / sqrt(v1 - v2^2 + eps)), v1
// starting at 1 instead of 0, and with momentum the learning rate inside it: v3 <- mm * v3 + lr *
// x; Decay: w <- w * (1 - wd) - v3; L2Regularization: w <- w - v3.
enum class AdaptiveMode { AdaGrad = 0, RMSProp, CenteredRMSProp, AdaDelta };

class XTRAIN_API Adaptive : public KeyedOptimizer {
 public:
  static const std::vector<std::string>& hyperParameterNames();

  Adaptive(OptimizerValue defaultLearningRate, OptimizerValue defaultWeightDecay,
           OptimizerValue defaultAlpha, OptimizerValue defaultMomentum, OptimizerValue defaultEps,
           OptimizerValue lossScaling, AdaptiveMode adaptiveMode, WeightDecayMode weightDecayMode,
           DataType accumType, DataType accl1Type, DataType accl2Type, DataType accl3Type,
           bool rmspropTFVariant = false,
           const std::vector<ClipNormSettings>& clipNormSettings = {});
  // PopART's map form. Keys: defaultLearningRate (default 0.01, non-constant), defaultWeightDecay
  // (0), defaultAlpha (0.99), defaultMomentum (0), defaultEps (1e-6), lossScaling (1).
  Adaptive(const std::map<std::string, std::pair<float, bool>>& params, AdaptiveMode adaptiveMode,
           WeightDecayMode weightDecayMode = WeightDecayMode::L2Regularization,
           DataType accumType = DataType::UNDEFINED, DataType accl1Type = DataType::FLOAT,
           DataType accl2Type = DataType::FLOAT, DataType accl3Type = DataType::FLOAT,
           bool rmspropTFVariant = false,
           const std::vector<ClipNormSettings>& clipNormSettings = {});

  OptimizerType type() const override { return OptimizerType::Adaptive; }
  std::string type_s() const override { return "Adaptive"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<Adaptive>(*this); }
  // learningRate, weightDecay, alpha, momentum, eps.
  const std::vector<std::string>& specificKeys() const override;

  AdaptiveMode getMode() const { return mode_; }
  DataType getAccl1Type() const { return accl1Type_; }
  DataType getAccl2Type() const { return accl2Type_; }
  DataType getAccl3Type() const { return accl3Type_; }
  bool getRmspropTFVariant() const { return rmspropTFVariant_; }
  // True when some weight may have a non-zero momentum (then every weight keeps Accl3).
  bool requiresMomentum() const;

 private:
  void validate() const override;

  AdaptiveMode mode_;
  DataType accl1Type_;
  DataType accl2Type_;
  DataType accl3Type_;
  bool rmspropTFVariant_ = false;
};

XTRAIN_API const char* toString(AdamMode mode);
XTRAIN_API const char* toString(AdaptiveMode mode);
XTRAIN_API const char* toString(WeightDecayMode mode);

}  // namespace xtrain
