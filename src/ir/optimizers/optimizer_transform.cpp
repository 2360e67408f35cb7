#include "ir/optimizers/optimizer_transform.hpp"

#include "common/check.hpp"

namespace xtrain::ir {

namespace {

const SGD& asSgd(const Optimizer& optimizer) {
  if (optimizer.type() != OptimizerType::SGD) {
    throw error("optimizer {} is not supported yet (supported: SGD, ConstSGD)", optimizer.type_s());
  }
  return static_cast<const SGD&>(optimizer);
}

TensorId addState(Graph& graph, const std::string& prefix, const TensorId& weight,
                  const TensorInfo& info, TensorKind kind) {
  TensorId id = graph.uniqueId(prefix + "___" + weight);
  graph.addTensor(id, info, kind, std::make_shared<HostTensor>(info));
  return id;
}

}  // namespace

std::vector<float> hyperValues(const Optimizer& optimizer, const TensorId& weight,
                               const OptimizerTransformOptions& options) {
  const SGD& sgd = asSgd(optimizer);
  const SGD::Values v = sgd.valuesFor(weight);
  double gradScale = 1.0 / optimizer.getLossScalingVal();
  if (options.reduction == ReductionType::Mean && options.strategy == MeanReductionStrategy::Post) {
    gradScale /= static_cast<double>(options.accumulationFactor * options.replicasFor(weight));
  }
  return {v.learningRate.val(), v.weightDecay.val(),     v.momentum.val(),
          v.dampening.val(),    v.velocityScaling.val(), static_cast<float>(gradScale)};
}

OptimizerGraph applyOptimizer(Graph& graph, const Optimizer& optimizer,
                              const std::map<TensorId, TensorId>& gradOfWeight,
                              const OptimizerTransformOptions& options) {
  const SGD& sgd = asSgd(optimizer);
  if (options.reduction == ReductionType::NoReduction) {
    throw error(
        "accumulationAndReplicationReductionType NoReduction is not valid for gradients (use Sum "
        "or "
        "Mean)");
  }
  XT_CHECK_GE(options.accumulationFactor, 1, "accumulation factor");
  OptimizerGraph result;
  const bool accumulate = options.accumulationFactor > 1;
  const bool running = options.reduction == ReductionType::Mean &&
                       options.strategy == MeanReductionStrategy::Running;
  result.replicaReductionIsMean = running;
  if (accumulate) {
    result.accumulationIndex = graph.uniqueId("accumulationIndex");
    graph.addTensor(result.accumulationIndex, TensorInfo(DataType::FLOAT, {}),
                    TensorKind::OptimizerState,
                    std::make_shared<HostTensor>(TensorInfo(DataType::FLOAT, {})));
  }
  const bool velocity = sgd.requiresVelocity();

  for (const auto& [weight, grad] : gradOfWeight) {
    const TensorInfo& info = graph.tensor(weight).info;
    if (info.dataType() != DataType::FLOAT) {
      throw error("weight '{}' is {}; SGD updates FLOAT weights only for now", weight,
                  info.toString());
    }
    WeightUpdate u;
    u.weight = weight;
    u.grad = grad;
    u.reduced = grad;
    if (accumulate) {
      u.accumulator = addState(graph, "Accum", weight, info, TensorKind::Accumulator);
      u.reduced = u.accumulator;
      OpSpec acc;
      acc.type = "AccumulateGrad";
      acc.domain = kXtrainDomain;
      acc.inputs = {u.accumulator, grad, result.accumulationIndex};
      acc.numOutputs = 0;
      acc.attrs.set("mode", std::string(running ? "running" : "sum"));
      acc.phase = Phase::Accumulate;
      acc.name = "accumulate/" + weight;
      graph.addOp(std::move(acc));
    }
    u.hyper = graph.uniqueId("SgdHyper___" + weight);
    const auto hv = hyperValues(optimizer, weight, options);
    graph.addTensor(u.hyper, TensorInfo(DataType::FLOAT, {6}), TensorKind::OptimizerState,
                    std::make_shared<HostTensor>(HostTensor::fromVector<float>({6}, hv)));
    TensorInfo stateInfo = info;
    TensorId updatedWeight = weight;
    TensorId updateGrad = u.reduced;
    if (auto shard = options.shardElements.find(weight); shard != options.shardElements.end()) {
      // The update runs on this replica's shard; the shards are scratch the session fills.
      u.shardElements = shard->second;
      stateInfo = TensorInfo(DataType::FLOAT, {u.shardElements});
      u.weightShard = addState(graph, "ShardW", weight, stateInfo, TensorKind::Activation);
      u.gradShard = addState(graph, "ShardG", weight, stateInfo, TensorKind::Activation);
      updatedWeight = u.weightShard;
      updateGrad = u.gradShard;
    }
    if (velocity)
      u.velocity = addState(graph, "Accl", weight, stateInfo, TensorKind::OptimizerState);

    OpSpec upd;
    upd.type = "SGDUpdate";
    upd.domain = kXtrainDomain;
    upd.inputs = {updatedWeight, updateGrad, u.hyper};
    if (velocity) upd.inputs.push_back(u.velocity);
    upd.numOutputs = 0;
    upd.attrs.set("nesterov", int64_t{sgd.nesterov() ? 1 : 0});
    // A sharded update reads a shard of the accumulator: the session zeroes the accumulator itself.
    upd.attrs.set("zeroGrad", int64_t{accumulate && u.shardElements == 0 ? 1 : 0});
    upd.phase = Phase::Update;
    upd.name = "update/" + weight;
    graph.addOp(std::move(upd));
    result.updates.push_back(u);
  }
  return result;
}

void checkOptimizerUpdate(const Optimizer& current, const Optimizer& next,
                          const std::vector<TensorId>& weights) {
  if (current.type() != next.type()) {
    throw error("updateOptimizerFromHost: the session was built with {}, cannot switch to {}",
                current.type_s(), next.type_s());
  }
  const SGD& a = asSgd(current);
  const SGD& b = asSgd(next);
  if (a.nesterov() != b.nesterov()) {
    throw error("updateOptimizerFromHost: nesterov is fixed when the session is built");
  }
  if (b.requiresVelocity() && !a.requiresVelocity()) {
    throw error(
        "updateOptimizerFromHost: the new optimizer needs momentum but the session was built "
        "without "
        "velocity tensors (make momentum non-constant or non-zero when creating the session)");
  }
  auto same = [](const char* name, const TensorId& w, const OptimizerValue& x,
                 const OptimizerValue& y) {
    if (x.isConst() && x.val() != y.val()) {
      throw error(
          "updateOptimizerFromHost: {} of weight '{}' is constant ({}) and cannot change to {}",
          name, w, x.val(), y.val());
    }
  };
  if (current.lossScaling().isConst() && current.getLossScalingVal() != next.getLossScalingVal()) {
    throw error("updateOptimizerFromHost: loss scaling is constant ({}) and cannot change to {}",
                current.getLossScalingVal(), next.getLossScalingVal());
  }
  for (const auto& w : weights) {
    const auto x = a.valuesFor(w);
    const auto y = b.valuesFor(w);
    same("learning rate", w, x.learningRate, y.learningRate);
    same("weight decay", w, x.weightDecay, y.weightDecay);
    same("momentum", w, x.momentum, y.momentum);
    same("dampening", w, x.dampening, y.dampening);
    same("velocity scaling", w, x.velocityScaling, y.velocityScaling);
  }
}

}  // namespace xtrain::ir
