// Automatic loss scaling with PopART's histogram method (docs/optimizers.md section 6.2): which
// gradients are tracked, their 2-bin histograms after every micro-batch, and the update of
// lossScaleUpdateFactor every updatePeriod steps. PopART builds this as graph ops (Histogram,
// Sum, Cast, an accumulator, ReplicatedAllReduce, LossScaleUpdate); xtrain counts on the host
// between the replicas' programs, with the same numbers: counts per tensor, summed, in FLOAT.
#include <algorithm>
#include <cmath>
#include <set>

#include "session/update_control.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/tensornames.hpp"

namespace xtrain::session {
namespace {

constexpr const char* kFinalLossScale = "finalLossScale";
constexpr const char* kUpdateFactor = "lossScaleUpdateFactor";
constexpr const char* kStatistics = "Accum___autoLossScaleStats";
constexpr float kHalfMax = 65504.0f;
// The largest power of two a FLOAT16 loss scale may reach (PopART's clipped update).
constexpr float kHalfScaleCeiling = 32768.0f;

bool histogramEnabled(const SessionOptions& o) {
  return o.automaticLossScalingSettings.enabled &&
         o.automaticLossScalingSettings.method == AutomaticLossScalingMethod::Histogram;
}

// PopART's view-changing ops (their gradients are views too): not tracked.
bool isViewChange(const std::string& type) {
  static const std::set<std::string> views = {"Reshape",   "Flatten",  "Squeeze", "Unsqueeze",
                                              "Transpose", "Identity", "Detach",  "StopGradient"};
  return views.count(type) != 0;
}

// The ops whose gradients PopART's ConvAndMatmulGradients tracks (after its patterns, the
// gradients of Gemm and ConvTranspose are MatMul and Conv ops too).
bool isConvOrMatMul(const std::string& type) {
  static const std::set<std::string> ops = {"MatMul", "MatMulT", "Gemm", "Conv", "ConvTranspose"};
  return ops.count(type) != 0;
}

// Whether PopART's gradient op for input `input` of `op` reads a weight: such a gradient is not
// tracked (PopART's rule, which keeps the histograms out of the weights' update cycle). Conv and
// MatMul gradients read transposed or flipped copies after PopART's patterns; Add's and Sub's
// read no input; Mul's and Div's read the other operand; any other op's gradient op reads its
// inputs (BatchNormalization's reads its scale).
bool gradientReadsWeight(const ir::Graph& g, const ir::Op& op, size_t input) {
  if (isConvOrMatMul(op.type) || op.type == "Add" || op.type == "Sub" || op.type == "Sum") {
    return false;
  }
  auto isWeight = [&](const TensorId& id) {
    return !id.empty() && g.tensor(id).kind == ir::TensorKind::Variable;
  };
  if (op.type == "Mul" || op.type == "Div") {
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      if (k != input && isWeight(op.inputs[k])) return true;
    }
    return false;
  }
  return std::any_of(op.inputs.begin(), op.inputs.end(), isWeight);
}

// Whether `op`'s gradient reads the loss scale: the op that makes the loss, and a Softmax whose
// output only that op reads when it is an Nll (PopART fuses their gradients into one op).
bool gradientReadsLossScale(const ir::Graph& g, const ir::Op& op, const TensorId& loss) {
  if (std::find(op.outputs.begin(), op.outputs.end(), loss) != op.outputs.end()) return true;
  if (op.type != "Softmax" || op.outputs.empty()) return false;
  std::vector<const ir::Op*> readers;  // in the forward pass (gradient ops read it too)
  for (OpId id : g.tensor(op.outputs[0]).consumers) {
    if (g.op(id).phase == ir::Phase::Forward) readers.push_back(&g.op(id));
  }
  if (readers.size() != 1) return false;
  const ir::Op& reader = *readers.front();
  const bool nll = reader.type == "Nll" || reader.type == "NegativeLogLikelihoodLoss";
  return nll &&
         std::find(reader.outputs.begin(), reader.outputs.end(), loss) != reader.outputs.end();
}

}  // namespace

bool isLossScalingTensor(const SessionOptions& options, const TensorId& id) {
  if (!histogramEnabled(options)) return false;
  return id == kFinalLossScale || id == kUpdateFactor || id == kStatistics ||
         id == std::string("lossScaling_FLOAT") || id == std::string("lossScaling_FLOAT16");
}

void checkLossScalingInInference(const SessionOptions& options) {
  if (options.automaticLossScalingSettings.enabled) {
    throw error("[AutomaticLossScale transform] Only compatible when doing training");
  }
}

std::vector<TensorId> UpdateControl::trackedTargets(const ir::Graph& graph) const {
  if (!histogramEnabled(config_->options)) return {};
  const auto& als = config_->options.automaticLossScalingSettings;
  const bool byName = als.gradientTensorTrackingMethod ==
                      GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors;
  if (als.toTrackTensors && !byName) {
    throw error(
        "[AutomaticLossScale transform] toTrackTensors has been set, but "
        "gradientTensorTrackingMethod has not been set to "
        "'GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors'.");
  }
  if (!byName) return {};
  if (!als.toTrackTensors) {
    throw error(
        "[AutomaticLossScale transform] gradientTensorTrackingMethod set to "
        "'GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors' but 'toTrackTensors' has "
        "not been set");
  }
  if (als.toTrackTensors->empty()) {
    throw error(
        "[PreAutomaticLossScale] An empty list was set as the value of 'toTrackTensors'. To "
        "disable tensor tracking, please set 'automaticLossScalingSettings.enabled = False'. To "
        "track the default tensors, please leave 'automaticLossScalingSettings.toTrackTensors' "
        "unset.");
  }
  std::vector<TensorId> targets;
  std::vector<TensorId> missing;
  for (const auto& id : *als.toTrackTensors) {
    if (std::find(targets.begin(), targets.end(), id) != targets.end()) {
      logging::session::warn(
          "[PreAutomaticLossScale] Tensor {} has been added more than once to the list of "
          "'toTrackTensors'. Please consider removing the duplicates.",
          id);
    } else if (!graph.hasTensor(id)) {
      missing.push_back(id);
    } else {
      targets.push_back(id);
    }
  }
  for (const auto& id : missing) {
    logging::session::err(
        "[PreAutomaticLossScale] Tensor {}, which was added to the "
        "'automaticLossScalingSettings.toTrackTensors' list, does not exist in the model.",
        id);
  }
  if (!missing.empty()) {
    throw error(
        "[PreAutomaticLossScale] Some of the tensors in the "
        "'automaticLossScalingSettings.toTrackTensors' list do not exist in the model. Please look "
        "at the error log.");
  }
  return targets;
}

void UpdateControl::trackGradients(ir::Graph& g,
                                   const std::vector<ir::GradientContribution>& contributions,
                                   const std::map<TensorId, TensorId>& gradOf,
                                   int64_t accumulationFactor) {
  if (!histogram_) return;
  const auto& als = config_->options.automaticLossScalingSettings;
  accumulationFactor_ = accumulationFactor;
  std::set<TensorId> seen;
  auto track = [&](const TensorId& id) {
    if (seen.insert(id).second) tracked_.push_back(id);
  };
  const auto method = als.gradientTensorTrackingMethod;
  if (method == GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors) {
    for (const auto& t : trackedTargets(g)) {
      auto it = gradOf.find(t);
      if (it == gradOf.end()) {
        throw error(
            "[AutomaticLossScale transform] toTrackTensors names '{}', which has no gradient: it "
            "does not influence the loss '{}', or is not floating point",
            t, config_->loss);
      }
      const DataType type = g.tensor(it->second).info.dataType();
      if (type != DataType::FLOAT16) {
        throw error(
            "[AutomaticLossScale transform] Unsupported data type {} for to-track tensor '{}'",
            dataTypeName(type), it->second);
      }
      track(it->second);
    }
  } else {
    for (const auto& c : contributions) {
      if (g.tensor(c.gradient).info.dataType() != DataType::FLOAT16) continue;
      if (g.tensor(c.gradient).kind != ir::TensorKind::Activation) continue;  // the seed
      if (c.forwardOp < 0) {  // a Sum of contributions: PopART's SumOp, tracked by the second rule
        if (method == GradientTensorTrackingMethod::AllNonViewChangingGradientTensors) {
          track(c.gradient);
        }
        continue;
      }
      const ir::Op& op = g.op(c.forwardOp);
      if (method == GradientTensorTrackingMethod::ConvAndMatmulGradients) {
        // A convolution's bias gradient is PopART's ReduceSum, not a convolution.
        if (isConvOrMatMul(op.type) && c.input < 2) track(c.gradient);
        continue;
      }
      if (isViewChange(op.type) || gradientReadsLossScale(g, op, config_->loss) ||
          gradientReadsWeight(g, op, c.input)) {
        continue;
      }
      // A gradient passed through unchanged (Add's) is PopART's identity: a view.
      if (std::find(op.outputs.begin(), op.outputs.end(), c.gradient) != op.outputs.end()) {
        continue;
      }
      track(c.gradient);
    }
    if (tracked_.empty()) {
      throw error(
          "[AutomaticLossScale transform] No tracked gradient tensors of type fp16 were found.");
    }
  }
  if (als.binEdgeLocation < 0 || als.binEdgeLocation > 1 || std::isnan(als.binEdgeLocation)) {
    throw error(
        "[AutomaticLossScale transform] Out of range value for 'binEdgeLocation'. The current "
        "value is {}, but it should be in the range [0, 1].",
        als.binEdgeLocation);
  }
  const float t = als.thresholdUpperCountProportion;
  if (t < 0 || t > 1 || std::isnan(t)) {
    throw error(
        "Out of range value for 'thresholdUpperCountProportion'. The current value is {}, but it "
        "should be in the range [0, 1].",
        t);
  }
  // The edge in the tracked tensors' type, as PopART's Histogram levels are.
  binEdge_ = halfToFloat(floatToHalf(kHalfMax * als.binEdgeLocation));
  if (accumulationFactor_ > 1) {
    statisticsAccumulator_ = kStatistics;
    HostTensor zeros(TensorInfo(DataType::FLOAT, {2}));
    zeros.fillZero();
    g.addTensor(statisticsAccumulator_, zeros.info(), ir::TensorKind::Accumulator,
                std::make_shared<HostTensor>(zeros));
  }
  for (const auto& id : tracked_) {
    logging::session::debug("automatic loss scaling tracks the gradient '{}' ({})", id,
                            g.tensor(id).info.toString());
  }
}

void UpdateControl::countGradients() {
  if (!histogram_) return;
  countGradientsOf(tracked_, nextHistogramActive());
}

bool UpdateControl::nextHistogramActive() {
  const int64_t period = config_->options.automaticLossScalingSettings.updatePeriod;
  if (period <= 1) return true;
  // PopART's counter: the histograms of the first step of every period.
  histogramCounter_ = (histogramCounter_ + 1) % (accumulationFactor_ * period);
  return histogramCounter_ < accumulationFactor_;
}

void UpdateControl::countGradientsOf(const std::vector<TensorId>& ids, bool active) {
  if (!histogram_) return;
  const int64_t L = localReplicas();
  if (statistics_.size() != static_cast<size_t>(2 * L)) statistics_.assign(2 * L, 0.0f);
  for (int64_t r = 0; r < L; ++r) {
    uint64_t lower = 0;
    uint64_t upper = 0;
    if (active) {
      for (const auto& id : ids) {
        const HostTensor& g = buffer(r, id);
        uint64_t below = 0;
        for (uint16_t h : g.span<uint16_t>()) below += std::fabs(halfToFloat(h)) < binEdge_;
        lower += below;
        upper += static_cast<uint64_t>(g.nelms()) - below;  // inf and nan count as upper
      }
    }
    float* s = statistics_.data() + 2 * r;
    s[0] += static_cast<float>(lower);
    s[1] += static_cast<float>(upper);
    if (!statisticsAccumulator_.empty()) {
      float* acc = buffer(r, statisticsAccumulator_).data<float>();
      acc[0] = s[0];
      acc[1] = s[1];
    }
  }
}

void UpdateControl::updateLossScale() {
  if (!histogram_) return;
  const auto& als = config_->options.automaticLossScalingSettings;
  bool update = true;
  if (als.updatePeriod > 1) {
    updateCounter_ = (updateCounter_ + 1) % als.updatePeriod;
    update = updateCounter_ == 0;
  }
  if (update) {
    // The statistics summed over the replicas (PopART's all-reduce), in FLOAT.
    std::vector<float> sum(2, 0.0f);
    for (size_t k = 0; k < statistics_.size(); ++k) sum[k % 2] += statistics_[k];
    exchange_->sumOnAllInstances(sum, "lossScaleStatistics");
    // upper / (upper + lower) > t, computed as PopART does: upper > lower * t / (1 - t).
    const float t = als.thresholdUpperCountProportion;
    const float f = t / (1.0f - t);
    const bool down = sum[1] > sum[0] * f;
    float next = down ? updateFactor_ * 0.5f : updateFactor_ * 2.0f;
    // A FLOAT16 loss scale stops at 2^15 (PopART's clipped update of a FLOAT16 scale).
    if (!down && halfLoss_ && optimizerLossScaling_ * next > kHalfScaleCeiling) {
      next = updateFactor_;
    }
    logging::session::debug(
        "automatic loss scaling: {} of {} tracked gradient elements at or above {}: factor {} -> "
        "{}",
        sum[1], sum[0] + sum[1], binEdge_, updateFactor_, next);
    if (next != updateFactor_) {
      updateFactor_ = next;
      lossScaling_ = optimizerLossScaling_ * updateFactor_;
      writeHyperValues();
    }
  }
  std::fill(statistics_.begin(), statistics_.end(), 0.0f);
  if (!statisticsAccumulator_.empty()) {
    for (int64_t r = 0; r < localReplicas(); ++r) buffer(r, statisticsAccumulator_).fillZero();
  }
}

void UpdateControl::addHistogramTensors(ir::Graph& g, const TensorInfo& lossInfo) {
  const Optimizer& opt = *config_->optimizer;
  if (opt.lossScaling().isConst()) {
    throw error("[AutomaticLossScale transform] The optimizer must have non-const loss scaling");
  }
  const SessionOptions& o = config_->options;
  if (o.enablePipelining && !o.enableGradientAccumulation) {
    throw error(
        "[AutomaticLossScale transform] Automatic loss scaling is not currently supported when the "
        "'enablePipelining' SessionOption is set to 'true', but the 'enableGradientAccumulation' "
        "SessionOption is set to 'false'");
  }
  // As PopART's EnsureFp32LossScale: the scale tensors are FLOAT whatever the loss's type; the
  // backward pass's seed is finalLossScale in the loss's type.
  const TensorInfo scalar(DataType::FLOAT, {});
  auto add = [&](const TensorId& id, float value) {
    HostTensor v(scalar);
    v.fill(value);
    g.addTensor(id, scalar, ir::TensorKind::OptimizerState,
                std::make_shared<HostTensor>(std::move(v)));
  };
  add(std::string("lossScaling_") + dataTypeName(lossInfo.dataType()), optimizerLossScaling_);
  add(kUpdateFactor, updateFactor_);
  add(kFinalLossScale, lossScaling_);
}

void UpdateControl::writeHistogramTensors() {
  const TensorInfo scalar(DataType::FLOAT, {});
  auto write = [&](const TensorId& id, float value) {
    HostTensor v(scalar);
    v.fill(value);
    writeEverywhere(id, v);
  };
  const TensorInfo& lossInfo = graph_->tensor(config_->loss).info;
  write(std::string("lossScaling_") + dataTypeName(lossInfo.dataType()), optimizerLossScaling_);
  write(kUpdateFactor, updateFactor_);
  write(kFinalLossScale, lossScaling_);
}

}  // namespace xtrain::session
