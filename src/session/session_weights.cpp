// The session's weight calls: checked against the session's state (prepared, the device attached),
// then the host views (HostState) moved to or from the replicas, the user's buffers, ONNX files;
// and a new optimizer's hyperparameters (UpdateControl).
#include "comm/communicator.hpp"
#include "ir/onnx/onnx_export.hpp"
#include "ir/onnx/onnx_metadata.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "session/model_io.hpp"
#include "session/session_impl.hpp"

namespace xtrain::session {

void SessionImpl::weightsFromHost() {
  ReplicaRuntime& runtime = requireAttached("weightsFromHost");
  loadEngine();
  hostState_.toReplicas(runtime, runtime.layout());
}

void SessionImpl::weightsToHost() {
  ReplicaRuntime& runtime = requireAttached("weightsToHost");
  hostState_.fromReplicas(runtime.exchange(), runtime);
}

void SessionImpl::broadcastWeights(int rootRank) {
  hostState_.broadcast(requireAttached("broadcastWeights").exchange(), rootRank);
}

void SessionImpl::readWeights(const WeightsIO& weights) {
  requirePrepared("readWeights");
  hostState_.readWeights(weights);
}

void SessionImpl::writeWeights(const WeightsIO& weights) {
  requirePrepared("writeWeights");
  hostState_.writeWeights(weights);
}

void SessionImpl::modelToHost(const std::string& path, bool withOptimizerState) {
  requireAttached("modelToHost");
  if (withOptimizerState && !config_.training) {
    throw error("modelToHost: an inference session has no optimizer state to write");
  }
  weightsToHost();
  std::map<TensorId, HostTensor> extra;
  const std::map<TensorId, HostTensor> values =
      hostState_.modelValues(*graph_, optimizerGraph_, withOptimizerState, extra);
  // The optimizer whose state the initializers hold, so a session of another mode refuses them.
  std::map<std::string, std::string> metadata;
  if (!extra.empty() || hostState_.hasStateInitializers()) {
    metadata[ir::kOptimizerStateOfKey] = ir::describeOptimizer(*config_.optimizer);
  }
  // Every instance holds the complete values; one file is written.
  if (const auto& instances = runtime_->instances(); instances && instances->rank() != 0) return;
  writeModelWithWeights(modelBytes_, values, path, extra, metadata);
}

void SessionImpl::updateExternallySavedTensorLocations(const std::string& from,
                                                        const std::string& to) {
  // The model modelToHost writes from: its initializers stored in `from` now live in `to`.
  modelBytes_ = ir::relocateExternalData(modelBytes_, from, to);
}

void SessionImpl::resetHostWeights(const std::string& model, bool ignoreMissing) {
  requirePrepared("resetHostWeights");
  hostState_.resetFromModel(*graph_, model, ignoreMissing);
}

void SessionImpl::updateOptimizerFromHost(const Optimizer& next) {
  XT_CHECK(config_.training, "updateOptimizerFromHost on an inference session");
  // Before prepareDevice the values only go into the graph; after it, to the device too.
  if (prepared_) requireAttached("updateOptimizerFromHost");
  std::vector<TensorId> weights;
  for (const auto& u : optimizerGraph_.updates) weights.push_back(u.weight);
  ir::checkOptimizerUpdate(*config_.optimizer, next, weights);
  const float previousLossScaling = config_.optimizer->getLossScalingVal();
  config_.optimizer = next.clone();
  updateControl_.optimizerChanged(previousLossScaling);
}

}  // namespace xtrain::session
