// TrainingSession checkpoints: which datasets a session's state becomes
// (docs/checkpoint-format.md) and the checks before anything is loaded. How the instances of a job
// share the writing and agree is the CheckpointCoordinator's (checkpoint_coordinator.hpp).
//
// The datasets are the complete host views (weightsToHost makes them whole on every instance:
// grouped weights with their [groups] dimension, sharded state gathered and unpadded), so a
// checkpoint does not depend on the layout that wrote it, and loading into another layout is
// weightsFromHost of the same views.
#include <chrono>
#include <set>

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

std::string SessionImpl::computeGraphFingerprint() const {
  checkpoint::Fnv1a64 f;
  for (const auto& [id, op] : graph_->ops()) {
    f.add(op->domain + ":" + op->type);
    for (const auto& in : op->inputs) f.add("<" + in);
    for (const auto& out : op->outputs) f.add(">" + out);
  }
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    f.add(id + " " + graph_->tensor(id).info.toString());
  }
  return checkpoint::graphFingerprint(f.value);
}

std::vector<std::pair<TensorId, std::string>> SessionImpl::checkpointTensors() const {
  std::vector<std::pair<TensorId, std::string>> out;
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    out.emplace_back(id, "/weights/" + checkpoint::encodeName(id));
  }
  for (const auto& u : optimizerGraph_.updates) {
    const std::string prefix = "/optimizer/" + checkpoint::encodeName(u.weight) + "/";
    for (const auto& state : ir::stateWithAccumulator(u)) {
      out.emplace_back(state.id, prefix + state.slot);
    }
  }
  return out;
}

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
  for (const auto& [id, dataset] : checkpointTensors()) {
    sources.push_back({dataset, &wholeHostValue(id)});
  }
  std::vector<checkpoint::Dataset> owned;
  const auto rng = rngState();
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
  a.globalReplicationFactor = globalReplicas_;
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
    checkCheckpointContents(path, c);
  };
}

void SessionImpl::checkCheckpointContents(const std::string& path,
                                          const checkpoint::Contents& c) const {
  const auto& a = c.attributes;
  std::set<std::string> expected;
  for (const auto& [id, dataset] : checkpointTensors()) {
    expected.insert(dataset);
    const HostTensor& host = hostWeights_.at(id);
    auto it = c.datasets.find(dataset);
    const bool isAccumulator =
        dataset.size() > 12 && dataset.rfind("/accumulator") == dataset.size() - 12;
    if (it == c.datasets.end()) {
      if (isAccumulator)
        continue;  // zero between steps; a checkpoint without accumulation has none
      throw error("checkpoint '{}' has no {} (this session's '{}', {}){}", path, dataset, id,
                  host.info().toString(),
                  dataset.rfind("/optimizer/", 0) == 0
                      ? ": was it written with another optimizer (e.g. without momentum)?"
                      : "");
    }
    if (it->second.info() != host.info()) {
      throw error("checkpoint '{}': {} is {} but this session's '{}' is {}", path, dataset,
                  it->second.info().toString(), id, host.info().toString());
    }
  }
  for (const auto& [dataset, value] : c.datasets) {
    if (dataset.rfind("/state/", 0) == 0 || expected.count(dataset)) continue;
    if (dataset.size() > 12 && dataset.rfind("/accumulator") == dataset.size() - 12) continue;
    throw error("checkpoint '{}' has {} ({}), which this session does not have{}", path, dataset,
                value.info().toString(),
                dataset.rfind("/optimizer/", 0) == 0
                    ? " (was it written with another optimizer, e.g. with momentum?)"
                    : "");
  }
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
}

CheckpointInfo SessionImpl::installCheckpoint(const std::string& path, checkpoint::Contents c) {
  for (const auto& [id, dataset] : checkpointTensors()) {
    auto it = c.datasets.find(dataset);
    if (it != c.datasets.end()) {
      hostWeights_.at(id) = std::move(it->second);
    } else {
      hostWeights_.at(id).fillZero();
    }
  }
  updateControl_.restoreState(c.attributes.hyperparameters);
  const HostTensor& rng = c.datasets.at(kRngPath);
  setRngState(std::vector<uint32_t>(rng.data<uint32_t>(), rng.data<uint32_t>() + 4));
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
