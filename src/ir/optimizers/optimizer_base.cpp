// What every optimizer shares: clipping groups, the keyed hyperparameter store of Adam and
// Adaptive, and the mode names.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "xtrain/error.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain {

ClipNormSettings ClipNormSettings::clipWeights(const std::vector<TensorId>& weightIds,
                                               float maxNorm) {
  if (weightIds.empty()) throw error("ClipNormSettings::clipWeights: the list of weights is empty");
  return ClipNormSettings(weightIds, maxNorm, Mode::ClipSpecifiedWeights);
}

ClipNormSettings ClipNormSettings::clipAllWeights(float maxNorm) {
  return ClipNormSettings({}, maxNorm, Mode::ClipAllWeights);
}

void Optimizer::setClipNormSettings(std::vector<ClipNormSettings> settings) {
  std::set<TensorId> seen;
  for (const auto& c : settings) {
    if (!std::isfinite(c.getMaxNorm()) || !(c.getMaxNorm() > 0)) {
      throw error("ClipNormSettings: the maximum norm {} must be finite and > 0", c.getMaxNorm());
    }
    if (c.getMode() == ClipNormSettings::Mode::ClipAllWeights && settings.size() > 1) {
      throw error(
          "ClipNormSettings: {} clip groups given, but one of them is clipAllWeights, which must "
          "be "
          "the only group",
          settings.size());
    }
    for (const auto& w : c.getWeightIds()) {
      if (!seen.insert(w).second) {
        throw error("ClipNormSettings: weight '{}' is in more than one clip group", w);
      }
    }
  }
  clipNormSettings_ = std::move(settings);
}

void KeyedOptimizer::applyMap(const std::map<std::string, std::pair<float, bool>>& params) {
  for (const auto& [key, value] : params) {
    if (key == "lossScaling") {
      lossScaling_ = OptimizerValue(value);
      continue;
    }
    std::string k = key;
    if (key.rfind("default", 0) == 0 && key.size() > 7) {
      k = key.substr(7);
      k[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(k[0])));
    }
    const auto& keys = specificKeys();
    // Only maxWeightNorm may be given without the "default" prefix (PopART's Adam accepts both).
    const bool known =
        std::find(keys.begin(), keys.end(), k) != keys.end() && (k != key || k == "maxWeightNorm");
    if (!known) {
      std::vector<std::string> names{"lossScaling"};
      for (const auto& s : keys) {
        std::string d = s;
        d[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(d[0])));
        names.push_back("default" + d);
      }
      throw error("{}: unknown hyperparameter '{}' (expected one of {})", type_s(), key, names);
    }
    defaults_[k] = OptimizerValue(value);
  }
}

void KeyedOptimizer::insertSpecific(const TensorId& weight,
                                    const std::map<std::string, std::pair<float, bool>>& params) {
  OptimizerValues v = defaults_;
  const auto& keys = specificKeys();
  for (const auto& [key, value] : params) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      throw error("{}::insertSpecific('{}'): unknown hyperparameter '{}' (expected one of {})",
                  type_s(), weight, key, keys);
    }
    v[key] = OptimizerValue(value);
  }
  specific_[weight] = std::move(v);
  validate();
}

OptimizerValues KeyedOptimizer::valuesOf(const TensorId& weight) const {
  auto it = specific_.find(weight);
  return it == specific_.end() ? defaults_ : it->second;
}

void KeyedOptimizer::forEachValues(
    const std::function<void(const OptimizerValues&, const std::string&)>& check) const {
  check(defaults_, "the defaults");
  for (const auto& [w, v] : specific_) check(v, "weight '" + w + "'");
  if (!(lossScaling_.val() > 0) || !std::isfinite(lossScaling_.val())) {
    throw error("{}: loss scaling {} must be finite and > 0", type_s(), lossScaling_.val());
  }
}

void KeyedOptimizer::checkCommonValues(const OptimizerValues& v, const std::string& where) const {
  const OptimizerValue& lr = v.at("learningRate");
  if (!std::isfinite(lr.val()) || lr.val() < 0) {
    throw error("{}: learning rate {} for {} must be finite and >= 0", type_s(), lr.val(), where);
  }
  if (lr.val() == 0 && lr.isConst()) {
    throw error(
        "{}: a constant learning rate of 0 for {} would never train (make it non-constant to set "
        "it later)",
        type_s(), where);
  }
  if (!(v.at("weightDecay").val() >= 0)) {
    throw error("{}: weight decay {} for {} must be >= 0", type_s(), v.at("weightDecay").val(),
                where);
  }
  if (!(v.at("eps").val() > 0)) {
    throw error("{}: eps {} for {} must be > 0", type_s(), v.at("eps").val(), where);
  }
}

DataType KeyedOptimizer::checkStateType(DataType t, const char* argument) {
  if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::UNDEFINED) {
    throw error(
        "optimizer argument {} is {}; expected FLOAT, FLOAT16 or UNDEFINED (the weight's type)",
        argument, dataTypeName(t));
  }
  return t;
}

const char* toString(AdamMode mode) {
  switch (mode) {
    case AdamMode::Adam: return "Adam";
    case AdamMode::AdamNoBias: return "AdamNoBias";
    case AdamMode::AdaMax: return "AdaMax";
    case AdamMode::Lamb: return "Lamb";
    case AdamMode::LambNoBias: return "LambNoBias";
  }
  return "?";
}

const char* toString(AdaptiveMode mode) {
  switch (mode) {
    case AdaptiveMode::AdaGrad: return "AdaGrad";
    case AdaptiveMode::RMSProp: return "RMSProp";
    case AdaptiveMode::CenteredRMSProp: return "CenteredRMSProp";
    case AdaptiveMode::AdaDelta: return "AdaDelta";
  }
  return "?";
}

const char* toString(WeightDecayMode mode) {
  return mode == WeightDecayMode::Decay ? "Decay" : "L2Regularization";
}

}  // namespace xtrain
