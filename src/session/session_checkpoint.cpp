// TrainingSession checkpoints: which datasets a session's state becomes
// (docs/checkpoint-format.md) and the checks before anything is loaded. The weights' and optimizer
// state's datasets are HostState's (host_transfers.cpp); the random state, the data position, the
// step and the loss scaling are the session's. How the instances of a job share the writing and
// agree is the CheckpointCoordinator's (checkpoint_coordinator.hpp).
#include <chrono>

#include "checkpoint/checkpoint.hpp"
#include "common/timeline.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "session/session_impl.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

constexpr const char* kRngPath = "/state/rng";
constexpr const char* kDataPath = "/state/data";

}  // namespace

void SessionImpl::saveCheckpoint(const std::string& path, const CheckpointOptions& options) {
  requireAttached("saveCheckpoint");
  XT_CHECK(config_.training, "saveCheckpoint on an inference session");
  timeline::Span traced(timeline::Category::Checkpoint, "save checkpoint");
  traced.text("path", path);
  checkpoints_.wait();
  if (path.empty()) throw error("saveCheckpoint: the path is empty");
  // Every instance must see the checkpoint's directory before any collective starts.
  checkpoints_.checkDirectory(path);
  const auto start = std::chrono::steady_clock::now();
  // The complete host views (a collective for grouped weights and sharded state, in the same order
  // on every instance), else replica 0's buffers.
  std::vector<CheckpointCoordinator::Source> sources;
  for (const auto& [id, dataset] : HostState::checkpointTensors(*graph_, optimizerGraph_)) {
    sources.push_back({dataset, &hostState_.whole(id, runtime_->exchange(), *runtime_)});
  }
  std::vector<checkpoint::Dataset> owned;
  const auto rng = random_.words();
  owned.push_back(
      {kRngPath, HostTensor::fromVector<uint32_t>({static_cast<int64_t>(rng.size())}, rng)});
  if (!options.dataPosition.empty()) {
    owned.push_back({kDataPath, HostTensor::fromVector<int64_t>(
                                    {static_cast<int64_t>(options.dataPosition.size())},
                                    options.dataPosition)});
  }

  checkpoint::Attributes a;
  a.step = stepCount_;
  a.epoch = options.epoch;
  a.samplesSeen = options.samplesSeen;
  a.globalReplicationFactor = layout_.global;
  a.optimizerType = ir::describeOptimizer(*config_.optimizer);
  for (const auto& [key, value] : config_.optimizer->valuesOf("")) {
    a.hyperparameters[key] = value.val();  // the defaults
  }
  // The factor in force; with automatic loss scaling also where its rule stands, so a resumed job
  // scales exactly as an uninterrupted one.
  updateControl_.saveState(a.hyperparameters);
  a.graphFingerprint = graphFingerprint_;
  checkpoints_.save(path, sources, std::move(owned), std::move(a), options.asynchronous, start);
}

std::optional<CheckpointInfo> SessionImpl::loadLatestCheckpoint(const std::string& directory) {
  requireAttached("loadLatestCheckpoint");
  XT_CHECK(config_.training, "loadLatestCheckpoint on an inference session");
  auto found = checkpoints_.loadLatest(directory, checkCheckpoint());
  if (!found) return std::nullopt;
  return installCheckpoint(found->first, std::move(found->second));
}

void SessionImpl::waitForCheckpoint() {
  checkpoints_.wait();
}

CheckpointInfo SessionImpl::loadCheckpoint(const std::string& path) {
  requireAttached("loadCheckpoint");
  XT_CHECK(config_.training, "loadCheckpoint on an inference session");
  return installCheckpoint(path, checkpoints_.load(path, checkCheckpoint()));
}

CheckpointCoordinator::Check SessionImpl::checkCheckpoint() const {
  return [this](const std::string& path, const checkpoint::Contents& c) {
    const auto& a = c.attributes;
    hostState_.checkCheckpointTensors(path, c,
                                      HostState::checkpointTensors(*graph_, optimizerGraph_));
    // The same slots can mean other things under another mode (Adam's v is AdaMax's infinity
    // norm; RMSProp's v1 a mean where AdaGrad's is a sum).
    if (const std::string mine = ir::describeOptimizer(*config_.optimizer);
        !a.optimizerType.empty() && a.optimizerType != mine) {
      throw error(
          "checkpoint '{}' was written by optimizer {}, but this session's is {}: its state would "
          "mean something else",
          path, a.optimizerType, mine);
    }
    // Tensors first (their messages say more), then the operations.
    if (a.graphFingerprint != graphFingerprint_) {
      throw error(
          "checkpoint '{}' was written for another model (graph fingerprint {}, this model's {}): "
          "its operations or weights differ",
          path, a.graphFingerprint, graphFingerprint_);
    }
    auto rng = c.datasets.find(kRngPath);
    if (rng == c.datasets.end() || rng->second.info() != TensorInfo(DataType::UINT32, {4})) {
      throw error("checkpoint '{}' has no valid {} (UINT32[4])", path, kRngPath);
    }
    if (auto d = c.datasets.find(kDataPath);
        d != c.datasets.end() &&
        (d->second.dataType() != DataType::INT64 || d->second.shape().size() != 1)) {
      throw error("checkpoint '{}': {} is {}, expected a 1-D INT64 tensor", path, kDataPath,
                  d->second.info().toString());
    }
  };
}

CheckpointInfo SessionImpl::installCheckpoint(const std::string& path, checkpoint::Contents c) {
  hostState_.installCheckpointTensors(c, HostState::checkpointTensors(*graph_, optimizerGraph_));
  updateControl_.restoreState(c.attributes.hyperparameters);
  const HostTensor& rng = c.datasets.at(kRngPath);
  random_.setWords(std::vector<uint32_t>(rng.data<uint32_t>(), rng.data<uint32_t>() + 4));
  stepCount_ = c.attributes.step;
  weightsFromHost();

  CheckpointInfo info;
  info.path = path;
  info.step = c.attributes.step;
  info.epoch = c.attributes.epoch;
  info.samplesSeen = c.attributes.samplesSeen;
  info.globalReplicationFactor = c.attributes.globalReplicationFactor;
  info.instances = c.attributes.instances;
  if (auto d = c.datasets.find(kDataPath); d != c.datasets.end()) {
    const int64_t* p = d->second.data<int64_t>();
    info.dataPosition.assign(p, p + d->second.nelms());
  }
  logging::session::info("checkpoint '{}' loaded: step {}, written by {} replicas on {} instances",
                         path, info.step, info.globalReplicationFactor, info.instances);
  return info;
}

}  // namespace xtrain::session
