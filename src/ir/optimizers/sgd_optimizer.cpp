// The SGD optimizer's hyperparameters (the public xtrain::SGD class).
#include <cmath>

#include "xtrain/error.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain {

const std::vector<std::string>& SGD::hyperParameterNames() {
  static const std::vector<std::string> names = {
      "defaultLearningRate",    "defaultWeightDecay", "defaultMomentum", "defaultDampening",
      "defaultVelocityScaling", "lossScaling",        "nesterov"};
  return names;
}

SGD::SGD(OptimizerValue lr, OptimizerValue wd, OptimizerValue mm, OptimizerValue dm,
         OptimizerValue vs, OptimizerValue ls, OptimizerValue nesterov,
         const std::vector<ClipNormSettings>& clipNormSettings)
    : defaults_{lr, wd, mm, dm, vs, nesterov} {
  lossScaling_ = ls;
  setClipNormSettings(clipNormSettings);
  validate();
}

SGD::SGD(const std::map<std::string, std::pair<float, bool>>& params,
         const std::vector<ClipNormSettings>& clipNormSettings)
    : SGD() {
  setClipNormSettings(clipNormSettings);
  for (const auto& [key, value] : params) {
    if (key == "lossScaling") {
      lossScaling_ = OptimizerValue(value);
    } else if (key == "nesterov") {
      defaults_.nesterov = OptimizerValue(value);
    } else if (key.rfind("default", 0) == 0 && key != "defaultNesterov") {
      std::string k = key.substr(7);
      if (!k.empty()) k[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(k[0])));
      apply(defaults_, k, value);
    } else {
      throw error("SGD: unknown hyperparameter '{}' (expected one of {})", key,
                  hyperParameterNames());
    }
  }
  validate();
}

SGD::SGD(const std::map<std::string, std::pair<float, bool>>& params,
         const std::vector<ClipNormSettings>& clipNormSettings, SGDAccumulatorAndMomentum accMm,
         DataType accumType, DataType accl1Type)
    : SGD(params, clipNormSettings) {
  if (accMm != SGDAccumulatorAndMomentum::Combined && accMm != SGDAccumulatorAndMomentum::Separate) {
    throw error("SGD: accumulatorAndMomentum {} is neither Combined (0) nor Separate (1)",
                static_cast<int>(accMm));
  }
  auto checkType = [](DataType t, const char* argument) {
    if (t != DataType::UNDEFINED && t != DataType::FLOAT && t != DataType::FLOAT16) {
      throw error("SGD: {} is {}; expected FLOAT, FLOAT16 or UNDEFINED (the weight's type)",
                  argument, dataTypeName(t));
    }
    return t;
  };
  accMm_ = accMm;
  accumType_ = checkType(accumType, "accumType");
  accl1Type_ = checkType(accl1Type, "accl1Type");
}

void SGD::apply(Values& v, const std::string& key, std::pair<float, bool> value) {
  const OptimizerValue ov(value);
  if (key == "learningRate")
    v.learningRate = ov;
  else if (key == "weightDecay")
    v.weightDecay = ov;
  else if (key == "momentum")
    v.momentum = ov;
  else if (key == "dampening")
    v.dampening = ov;
  else if (key == "velocityScaling")
    v.velocityScaling = ov;
  else if (key == "nesterov")
    v.nesterov = ov;
  else
    throw error(
        "SGD: unknown hyperparameter '{}' (expected learningRate, weightDecay, momentum, "
        "dampening, velocityScaling or nesterov, with a 'default' prefix for the defaults but "
        "nesterov)",
        key);
}

void SGD::insertSpecific(const TensorId& weight,
                         const std::map<std::string, std::pair<float, bool>>& params) {
  Values v = defaults_;
  for (const auto& [key, value] : params) apply(v, key, value);
  specific_[weight] = v;
  validate();
}

void SGD::insertSpecific(const TensorId& weight, OptimizerValue learningRate,
                         OptimizerValue weightDecay, OptimizerValue momentum,
                         OptimizerValue dampening, OptimizerValue velocityScaling,
                         OptimizerValue nesterov) {
  specific_[weight] =
      Values{learningRate, weightDecay, momentum, dampening, velocityScaling, nesterov};
  validate();
}

const std::vector<std::string>& SGD::specificKeys() const {
  static const std::vector<std::string> keys = {"learningRate", "weightDecay",     "momentum",
                                                "dampening",    "velocityScaling", "nesterov"};
  return keys;
}

OptimizerValues SGD::valuesOf(const TensorId& weight) const {
  const Values v = valuesFor(weight);
  return {{"learningRate", v.learningRate},
          {"weightDecay", v.weightDecay},
          {"momentum", v.momentum},
          {"dampening", v.dampening},
          {"velocityScaling", v.velocityScaling},
          {"nesterov", v.nesterov}};
}

SGD::Values SGD::valuesFor(const TensorId& weight) const {
  auto it = specific_.find(weight);
  return it == specific_.end() ? defaults_ : it->second;
}

bool SGD::requiresVelocity() const {
  auto needs = [](const Values& v) { return !v.momentum.isConst() || v.momentum.val() != 0.0f; };
  if (needs(defaults_)) return true;
  for (const auto& [w, v] : specific_) {
    if (needs(v)) return true;
  }
  return false;
}

void SGD::validate() const {
  auto check = [](const Values& v, const std::string& where) {
    if (!std::isfinite(v.learningRate.val()) || v.learningRate.val() < 0) {
      throw error("SGD: learning rate {} for {} must be finite and >= 0", v.learningRate.val(),
                  where);
    }
    if (v.momentum.val() < 0 || v.momentum.val() >= 1.0f + 1e-6f) {
      throw error("SGD: momentum {} for {} must be in [0, 1]", v.momentum.val(), where);
    }
    if (v.dampening.val() < 0 || v.dampening.val() > 1) {
      throw error("SGD: dampening {} for {} must be in [0, 1]", v.dampening.val(), where);
    }
    if (!(v.velocityScaling.val() > 0)) {
      throw error("SGD: velocity scaling {} for {} must be > 0", v.velocityScaling.val(), where);
    }
    if (v.weightDecay.val() < 0) {
      throw error("SGD: weight decay {} for {} must be >= 0", v.weightDecay.val(), where);
    }
    if (!std::isfinite(v.nesterov.val())) {
      throw error("SGD: nesterov {} for {} must be finite (0 off, anything else on)",
                  v.nesterov.val(), where);
    }
  };
  check(defaults_, "the defaults");
  for (const auto& [w, v] : specific_) check(v, "weight '" + w + "'");
  if (!(lossScaling_.val() > 0) || !std::isfinite(lossScaling_.val())) {
    throw error("SGD: loss scaling {} must be finite and > 0", lossScaling_.val());
  }
}

}  // namespace xtrain
