#include "ir/optimizers/optimizer_transform.hpp"

#include "common/check.hpp"
#include "ir/optimizers/update_rules.hpp"

namespace xtrain::ir {

namespace {

TensorId addState(Graph& graph, const std::string& prefix, const TensorId& weight,
                  const TensorInfo& info, TensorKind kind, float initialValue = 0.0f) {
  TensorId id = graph.uniqueId(stateInitializerName(prefix, weight));
  auto value = std::make_shared<HostTensor>(info);
  if (initialValue != 0.0f) value->fill(initialValue);
  graph.addTensor(id, info, kind, std::move(value));
  return id;
}

}  // namespace

std::string stateInitializerName(const std::string& prefix, const TensorId& weight) {
  return prefix + "___" + weight;
}

std::vector<StateTensor> stateWithAccumulator(const WeightUpdate& update) {
  std::vector<StateTensor> out = update.state;
  if (!update.accumulator.empty()) {
    out.push_back(
        {"accumulator", update.accumulator, stateInitializerName("Accum", update.weight), true});
  }
  return out;
}

std::vector<float> hyperValues(const Optimizer& optimizer, const TensorId& weight,
                               const OptimizerTransformOptions& options, float lossScaling) {
  double gradScale = 1.0 / lossScaling;
  if (options.reduction == ReductionType::Mean && options.strategy == MeanReductionStrategy::Post) {
    gradScale /= static_cast<double>(options.accumulationFactor * options.replicasFor(weight));
  }
  return hyperTensorOf(optimizer, weight, static_cast<float>(gradScale));
}

namespace {

// The weights' state takes the weight's type where the rule leaves it UNDEFINED.
DataType stateType(DataType ruleType, const TensorInfo& weight) {
  return ruleType == DataType::UNDEFINED ? weight.dataType() : ruleType;
}

void checkApplicable(const Optimizer& optimizer, const std::map<TensorId, TensorId>& gradOfWeight,
                     const OptimizerTransformOptions& options) {
  if (options.reduction == ReductionType::NoReduction) {
    throw error(
        "accumulationAndReplicationReductionType NoReduction is not valid for gradients (use Sum "
        "or Mean)");
  }
  XT_CHECK_GE(options.accumulationFactor, 1, "accumulation factor");
  for (const auto& clip : optimizer.getClipNormSettings()) {
    for (const auto& w : clip.getWeightIds()) {
      if (!gradOfWeight.count(w)) {
        throw error("ClipNormSettings names '{}', which is not a trained weight of the model", w);
      }
    }
  }
}

// What the replicas reduce and the update reads (u.reduced): with accumulation, the accumulator
// the micro-batches' gradients are added into (FLOAT16 accumulators through a FLOAT copy); else a
// FLOAT16 gradient's FLOAT copy; else the gradient itself.
void addReducedGradient(Graph& graph, WeightUpdate& u, const TensorInfo& info,
                        const UpdateRule& rule, const OptimizerTransformOptions& options,
                        const OptimizerGraph& result) {
  const TensorId& weight = u.weight;
  if (options.accumulationFactor > 1) {
    const DataType accumType = stateType(rule.accumType, info);
    u.accumulator = addState(graph, "Accum", weight, TensorInfo(accumType, info.shape()),
                             TensorKind::Accumulator);
    u.reduced = u.accumulator;
    if (accumType == DataType::FLOAT16) {
      // The session converts the accumulator into this FLOAT tensor (and clears it) before the
      // reduction, which is FLOAT-only.
      u.reduced = graph.uniqueId("GradF32___" + weight);
      graph.addTensor(u.reduced, TensorInfo(DataType::FLOAT, info.shape()), TensorKind::Activation);
    }
    OpSpec acc;
    acc.type = "AccumulateGrad";
    acc.domain = kXtrainDomain;
    acc.inputs = {u.accumulator, u.grad, result.accumulationIndex};
    acc.numOutputs = 0;
    acc.attrs.set("mode", std::string(result.replicaReductionIsMean ? "running" : "sum"));
    acc.attrs.set("stochasticRounding", int64_t{options.stochasticRounding ? 1 : 0});
    acc.phase = Phase::Accumulate;
    acc.name = "accumulate/" + weight;
    graph.addOp(std::move(acc));
  } else if (info.dataType() == DataType::FLOAT16) {
    // The replicas' reduction and the update read a FLOAT gradient (exact: every FLOAT16 value is
    // a FLOAT value).
    u.reduced = graph.uniqueId("GradF32___" + weight);
    OpSpec cast;
    cast.type = "Cast";
    cast.inputs = {u.grad};
    cast.outputs = {u.reduced};
    cast.attrs.set("to", static_cast<int64_t>(dataTypeToOnnx(DataType::FLOAT)));
    cast.phase = Phase::Accumulate;
    cast.name = "grad-to-float/" + weight;
    cast.opset = 13;
    graph.addOp(std::move(cast));
  }
}

// The weight's hyper-parameter tensor (u.hyper), which the session rewrites when they change.
void addHyperTensor(Graph& graph, WeightUpdate& u, const Optimizer& optimizer,
                    const OptimizerTransformOptions& options) {
  const auto hv = hyperValues(optimizer, u.weight, options, optimizer.getLossScalingVal());
  const char* hyperPrefix = optimizer.type() == OptimizerType::SGD    ? "SgdHyper"
                            : optimizer.type() == OptimizerType::Adam ? "AdamHyper"
                                                                      : "AdaptiveHyper";
  u.hyper = graph.uniqueId(stateInitializerName(hyperPrefix, u.weight));
  const Shape hyperShape{static_cast<int64_t>(hv.size())};
  graph.addTensor(u.hyper, TensorInfo(DataType::FLOAT, hyperShape), TensorKind::OptimizerState,
                  std::make_shared<HostTensor>(HostTensor::fromVector<float>(hyperShape, hv)));
}

// The update op of the rule with its state tensors, on the whole weight or on this replica's shard
// of it; a sharded Lamb update splits into the update and LambApply around the norms' sum.
void addUpdate(Graph& graph, WeightUpdate& u, const TensorInfo& info, const UpdateRule& rule,
               const Optimizer& optimizer, const OptimizerTransformOptions& options) {
  const TensorId& weight = u.weight;
  TensorInfo stateInfo = info;
  TensorId updatedWeight = weight;
  TensorId updateGrad = u.reduced;
  if (auto shard = options.shardElements.find(weight); shard != options.shardElements.end()) {
    // The update runs on this replica's shard; the shards are scratch the session fills.
    u.shardElements = shard->second;
    stateInfo = TensorInfo(info.dataType(), {u.shardElements});
    u.weightShard = addState(graph, "ShardW", weight, stateInfo, TensorKind::Activation);
    u.gradShard = addState(graph, "ShardG", weight, TensorInfo(DataType::FLOAT, {u.shardElements}),
                           TensorKind::Activation);
    updatedWeight = u.weightShard;
    updateGrad = u.gradShard;
  }

  OpSpec upd;
  upd.type = rule.opType;
  upd.domain = kXtrainDomain;
  upd.inputs = {updatedWeight, updateGrad, u.hyper};
  for (size_t k = 0; k < rule.slots.size(); ++k) {
    const StateSlotSpec& slot = rule.slots[k];
    const TensorInfo slotInfo = slot.perElement
                                    ? TensorInfo(stateType(slot.type, info), stateInfo.shape())
                                    : TensorInfo(DataType::FLOAT, {});
    StateTensor st{slot.slot,
                   addState(graph, slot.prefix, weight, slotInfo, TensorKind::OptimizerState,
                            slot.initialValue),
                   stateInitializerName(slot.prefix, weight), slot.perElement};
    if (upd.inputs.size() <= rule.inputSlots[k]) upd.inputs.resize(rule.inputSlots[k] + 1);
    upd.inputs[rule.inputSlots[k]] = st.id;
    u.state.push_back(std::move(st));
  }
  upd.numOutputs = 0;
  upd.attrs = updateAttrsOf(optimizer, rule, weight);
  if (rule.opType == "SGDUpdate" && !u.state.empty() &&
      graph.tensor(u.state.front().id).info.dataType() == DataType::FLOAT16) {
    upd.attrs.set("halfVelocity", int64_t{1});
  }
  // A sharded update reads a shard of the accumulator: the session zeroes the accumulator itself.
  const bool accumulate = options.accumulationFactor > 1;
  upd.attrs.set("zeroGrad",
                int64_t{u.accumulator == u.reduced && accumulate && u.shardElements == 0 ? 1 : 0});
  upd.attrs.set("stochasticRounding", int64_t{options.stochasticRounding ? 1 : 0});
  upd.phase = Phase::Update;
  upd.name = "update/" + weight;
  if (rule.lamb && u.shardElements > 0) {
    // The norms of a sharded weight are summed over its shards by the session before the weight
    // moves: the update leaves its step in the gradient shard and its partial sums in lambNorms.
    u.lambNorms = addState(graph, "LambNorms", weight, TensorInfo(DataType::FLOAT, {2}),
                           TensorKind::Activation);
    upd.inputs.resize(7);
    upd.inputs[6] = u.lambNorms;
    OpSpec apply;
    apply.type = "LambApply";
    apply.domain = kXtrainDomain;
    apply.inputs = {updatedWeight, updateGrad, u.hyper, u.lambNorms};
    apply.numOutputs = 0;
    apply.phase = Phase::Apply;
    apply.name = "lamb-apply/" + weight;
    graph.addOp(std::move(upd));
    graph.addOp(std::move(apply));
  } else {
    graph.addOp(std::move(upd));
  }
}

}  // namespace

OptimizerGraph applyOptimizer(Graph& graph, const Optimizer& optimizer,
                              const std::map<TensorId, TensorId>& gradOfWeight,
                              const OptimizerTransformOptions& options) {
  const UpdateRule rule = updateRuleOf(optimizer);
  checkApplicable(optimizer, gradOfWeight, options);
  OptimizerGraph result;
  const bool accumulate = options.accumulationFactor > 1;
  result.replicaReductionIsMean = options.reduction == ReductionType::Mean &&
                                  options.strategy == MeanReductionStrategy::Running;
  if (accumulate) {
    result.accumulationIndex = graph.uniqueId("accumulationIndex");
    graph.addTensor(result.accumulationIndex, TensorInfo(DataType::FLOAT, {}),
                    TensorKind::OptimizerState,
                    std::make_shared<HostTensor>(TensorInfo(DataType::FLOAT, {})));
  }
  for (const auto& [weight, grad] : gradOfWeight) {
    const TensorInfo& info = graph.tensor(weight).info;
    if (info.dataType() != DataType::FLOAT && info.dataType() != DataType::FLOAT16) {
      throw error("weight '{}' is {}; optimizers update FLOAT and FLOAT16 weights", weight,
                  info.toString());
    }
    WeightUpdate u;
    u.weight = weight;
    u.grad = grad;
    u.reduced = grad;
    addReducedGradient(graph, u, info, rule, options, result);
    addHyperTensor(graph, u, optimizer, options);
    addUpdate(graph, u, info, rule, optimizer, options);
    result.updates.push_back(u);
  }
  return result;
}

void checkOptimizerUpdate(const Optimizer& current, const Optimizer& next,
                          const std::vector<TensorId>& weights) {
  checkRuleReplacement(current, next, weights);
  if (current.lossScaling().isConst() && current.getLossScalingVal() != next.getLossScalingVal()) {
    throw error("updateOptimizerFromHost: loss scaling is constant ({}) and cannot change to {}",
                current.getLossScalingVal(), next.getLossScalingVal());
  }
  for (const auto& w : weights) {
    const auto x = current.valuesOf(w);
    const auto y = next.valuesOf(w);
    for (const auto& key : current.specificKeys()) {
      const OptimizerValue& a = x.at(key);
      const OptimizerValue& b = y.at(key);
      if (a.isConst() && a.val() != b.val()) {
        throw error(
            "updateOptimizerFromHost: {} of weight '{}' is constant ({}) and cannot change to {}",
            key, w, a.val(), b.val());
      }
    }
  }
}

}  // namespace xtrain::ir
