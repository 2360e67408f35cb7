#include "optimizer_flags.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <sstream>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::tools {

namespace {

enum class Family { Sgd, Adam, Adaptive };

// One --optimizer choice: the library optimizer it stands for (as PyTorch users expect the name:
// adam is Adam with L2 weight decay, adamw the decoupled decay), its default learning rate and the
// hyperparameter flags that apply to it.
struct Choice {
  const char* name;
  Family family;
  AdamMode adamMode;
  AdaptiveMode adaptiveMode;
  WeightDecayMode decayMode;
  float lr;
  std::vector<std::string> flags;
};

const std::vector<Choice>& choices() {
  using AM = AdamMode;
  using DM = AdaptiveMode;
  using WD = WeightDecayMode;
  const std::vector<std::string> common{"--lr", "--weight-decay", "--loss-scaling", "--clip-norm"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), common.begin(), common.end());
    return extra;
  };
  const auto adamFlags = with({"--beta1", "--beta2", "--eps"});
  static const std::vector<Choice> all{
      {"sgd", Family::Sgd, AM::Adam, DM::AdaGrad, WD::L2Regularization, 0.01f,
       with({"--momentum", "--dampening", "--nesterov"})},
      {"adam", Family::Adam, AM::Adam, DM::AdaGrad, WD::L2Regularization, 0.001f, adamFlags},
      {"adamw", Family::Adam, AM::Adam, DM::AdaGrad, WD::Decay, 0.001f, adamFlags},
      {"lamb", Family::Adam, AM::Lamb, DM::AdaGrad, WD::Decay, 0.001f,
       with({"--beta1", "--beta2", "--eps", "--max-weight-norm"})},
      {"adamax", Family::Adam, AM::AdaMax, DM::AdaGrad, WD::L2Regularization, 0.001f, adamFlags},
      // AdaGrad has no moving average, so no --alpha.
      {"adagrad", Family::Adaptive, AM::Adam, DM::AdaGrad, WD::L2Regularization, 0.01f,
       with({"--momentum", "--eps"})},
      {"rmsprop", Family::Adaptive, AM::Adam, DM::RMSProp, WD::L2Regularization, 0.01f,
       with({"--momentum", "--eps", "--alpha"})},
      {"centered-rmsprop", Family::Adaptive, AM::Adam, DM::CenteredRMSProp, WD::L2Regularization,
       0.01f, with({"--momentum", "--eps", "--alpha"})},
      {"adadelta", Family::Adaptive, AM::Adam, DM::AdaDelta, WD::L2Regularization, 1.0f,
       with({"--momentum", "--eps", "--alpha"})},
  };
  return all;
}

const Choice& choiceOf(const std::string& name) {
  for (const auto& c : choices()) {
    if (name == c.name) return c;
  }
  throw UsageError("unknown --optimizer '" + name + "' (expected one of " + optimizerNames() + ")");
}

// The range a flag's value must be in.
enum class Range { Positive, NonNegative, UnitClosed, UnitOpen };

struct Param {
  const char* flag;
  std::optional<float> TrainOptions::*field;
  Range range;
};

const std::vector<Param>& params() {
  static const std::vector<Param> all{
      {"--lr", &TrainOptions::lr, Range::Positive},
      {"--momentum", &TrainOptions::momentum, Range::UnitClosed},
      {"--weight-decay", &TrainOptions::weightDecay, Range::NonNegative},
      {"--dampening", &TrainOptions::dampening, Range::UnitClosed},
      {"--beta1", &TrainOptions::beta1, Range::UnitOpen},
      {"--beta2", &TrainOptions::beta2, Range::UnitOpen},
      {"--eps", &TrainOptions::eps, Range::Positive},
      {"--max-weight-norm", &TrainOptions::maxWeightNorm, Range::NonNegative},
      {"--alpha", &TrainOptions::alpha, Range::UnitClosed},
      {"--loss-scaling", &TrainOptions::lossScaling, Range::Positive},
      {"--clip-norm", &TrainOptions::clipNorm, Range::Positive},
  };
  return all;
}

std::string str(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void checkRange(const Param& p, float v) {
  const std::string got = ", got " + str(v);
  if (!std::isfinite(v)) throw UsageError(std::string(p.flag) + " must be a finite number" + got);
  switch (p.range) {
    case Range::Positive:
      if (!(v > 0)) throw UsageError(std::string(p.flag) + " must be greater than 0" + got);
      break;
    case Range::NonNegative:
      if (!(v >= 0)) throw UsageError(std::string(p.flag) + " must be >= 0" + got);
      break;
    case Range::UnitClosed:
      if (!(v >= 0 && v <= 1)) throw UsageError(std::string(p.flag) + " must be in [0, 1]" + got);
      break;
    case Range::UnitOpen:
      if (!(v >= 0 && v < 1)) throw UsageError(std::string(p.flag) + " must be in [0, 1)" + got);
      break;
  }
}

bool applies(const Choice& c, const std::string& flag) {
  return std::find(c.flags.begin(), c.flags.end(), flag) != c.flags.end();
}

std::string appliesList(const Choice& c) {
  std::string s;
  for (const auto& f : c.flags) s += (s.empty() ? "" : " ") + f;
  return s;
}

std::vector<ClipNormSettings> clipping(const TrainOptions& o) {
  if (!o.clipNorm) return {};
  return {ClipNormSettings::clipAllWeights(*o.clipNorm)};
}

}  // namespace

std::string optimizerNames() {
  std::string s;
  for (const auto& c : choices()) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

void resolveOptimizerOptions(TrainOptions& o) {
  const Choice& c = choiceOf(o.optimizer);
  auto notApplicable = [&](const std::string& flag) {
    return UsageError(flag + " does not apply to --optimizer " + o.optimizer + " (it takes " +
                      appliesList(c) + ")");
  };
  for (const Param& p : params()) {
    const auto& value = o.*p.field;
    if (!value) continue;
    if (!applies(c, p.flag)) throw notApplicable(p.flag);
    checkRange(p, *value);
  }
  if (o.nesterov && !applies(c, "--nesterov")) throw notApplicable("--nesterov");

  // Defaults: PyTorch's learning rates; every other value is the library's default (momentum 0.9
  // for sgd, as xtrain always had).
  auto fill = [&](std::optional<float> TrainOptions::*field, const char* flag, float value) {
    if (applies(c, flag) && !(o.*field)) o.*field = value;
  };
  fill(&TrainOptions::lr, "--lr", c.lr);
  fill(&TrainOptions::momentum, "--momentum", c.family == Family::Sgd ? 0.9f : 0.0f);
  fill(&TrainOptions::weightDecay, "--weight-decay", 0.0f);
  fill(&TrainOptions::dampening, "--dampening", 0.0f);
  fill(&TrainOptions::beta1, "--beta1", 0.9f);
  fill(&TrainOptions::beta2, "--beta2", 0.999f);
  fill(&TrainOptions::eps, "--eps", 1e-6f);
  fill(&TrainOptions::maxWeightNorm, "--max-weight-norm", 10.0f);
  fill(&TrainOptions::alpha, "--alpha",
       c.family == Family::Adaptive && c.adaptiveMode == AdaptiveMode::AdaDelta ? 0.9f : 0.99f);
  fill(&TrainOptions::lossScaling, "--loss-scaling", 1.0f);

  if (c.family == Family::Sgd && *o.momentum == 0) {
    // Without momentum SGD keeps no velocity: nesterov would be silently ignored (dampening still
    // scales the step, as in PopART).
    if (o.nesterov) throw UsageError("--nesterov needs a --momentum greater than 0");
  }
  if (o.lrSchedule != "constant" && o.lrSchedule != "linear" && o.lrSchedule != "cosine") {
    throw UsageError("--lr-schedule must be constant, linear or cosine, got '" + o.lrSchedule +
                     "'");
  }
  // The library checks the whole; its message names its own terms, so say which flags they are.
  try {
    makeOptimizer(o, *o.lr);
  } catch (const error& e) {
    throw UsageError(std::string("the hyperparameters of --optimizer ") + o.optimizer +
                     " were refused: " + e.what());
  }
}

std::unique_ptr<Optimizer> makeOptimizer(const TrainOptions& o, float lr) {
  const Choice& c = choiceOf(o.optimizer);
  const std::pair<float, bool> rate{lr, false};
  auto constant = [](const std::optional<float>& v) { return std::pair<float, bool>{*v, true}; };
  switch (c.family) {
    case Family::Sgd: {
      std::map<std::string, std::pair<float, bool>> m{
          {"defaultLearningRate", rate},
          {"defaultMomentum", constant(o.momentum)},
          {"defaultWeightDecay", constant(o.weightDecay)},
          {"defaultDampening", constant(o.dampening)},
          {"lossScaling", constant(o.lossScaling)}};
      if (o.nesterov) m.emplace("nesterov", std::pair<float, bool>{1.0f, true});
      return std::make_unique<SGD>(m, clipping(o));
    }
    case Family::Adam: {
      std::map<std::string, std::pair<float, bool>> m{
          {"defaultLearningRate", rate},       {"defaultWeightDecay", constant(o.weightDecay)},
          {"defaultBeta1", constant(o.beta1)}, {"defaultBeta2", constant(o.beta2)},
          {"defaultEps", constant(o.eps)},     {"lossScaling", constant(o.lossScaling)}};
      if (o.maxWeightNorm) m.emplace("maxWeightNorm", constant(o.maxWeightNorm));
      return std::make_unique<Adam>(m, c.adamMode, c.decayMode, DataType::FLOAT, DataType::FLOAT,
                                    DataType::FLOAT, clipping(o));
    }
    case Family::Adaptive: {
      std::map<std::string, std::pair<float, bool>> m{
          {"defaultLearningRate", rate},
          {"defaultWeightDecay", constant(o.weightDecay)},
          {"defaultMomentum", constant(o.momentum)},
          {"defaultEps", constant(o.eps)},
          {"lossScaling", constant(o.lossScaling)}};
      if (o.alpha) m.emplace("defaultAlpha", constant(o.alpha));
      return std::make_unique<Adaptive>(m, c.adaptiveMode, c.decayMode, DataType::FLOAT,
                                        DataType::FLOAT, DataType::FLOAT, DataType::FLOAT,
                                        /*rmspropTFVariant=*/false, clipping(o));
    }
  }
  throw internal_error("xtrain: optimizer family of '{}' not handled", o.optimizer);
}

std::string describeOptimizer(const TrainOptions& o) {
  const Choice& c = choiceOf(o.optimizer);
  std::ostringstream s;
  s << c.name;
  switch (c.family) {
    case Family::Sgd: s << " = SGD" << (o.nesterov ? " (nesterov)" : ""); break;
    case Family::Adam:
      s << " = Adam(" << toString(c.adamMode) << ", " << toString(c.decayMode) << ")";
      break;
    case Family::Adaptive:
      s << " = Adaptive(" << toString(c.adaptiveMode) << ", " << toString(c.decayMode) << ")";
      break;
  }
  const char* sep = ": ";
  for (const Param& p : params()) {
    const auto& value = o.*p.field;
    if (!value) continue;
    s << sep << (p.flag + 2) << " " << *value;
    sep = ", ";
  }
  return s.str();
}

double scheduledLearningRate(const std::string& schedule, double base, int64_t warmup, int64_t step,
                             int64_t total) {
  if (step < warmup) {
    return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
  }
  const double span = static_cast<double>(total - warmup);
  if (schedule == "constant" || span <= 0) return base;
  const double done = static_cast<double>(step - warmup);
  if (schedule == "linear") return base * (span - done) / span;
  if (schedule == "cosine") return base * 0.5 * (1.0 + std::cos(std::numbers::pi * done / span));
  throw internal_error("xtrain: unknown learning-rate schedule '{}'", schedule);
}

bool scheduleChangesLearningRate(const TrainOptions& o) {
  return o.lrSchedule != "constant" || o.warmupSteps > 0;
}

}  // namespace xtrain::tools
