// TrainingSession checkpoints: which datasets a session's state becomes
// (docs/checkpoint-format.md), how the instances of a job share the writing, and the checks before
// anything is loaded.
//
// The datasets are the complete host views (weightsToHost makes them whole on every instance:
// grouped weights with their [groups] dimension, sharded state gathered and unpadded), so a
// checkpoint does not depend on the layout that wrote it, and loading into another layout is
// weightsFromHost of the same views.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>

#include "checkpoint/checkpoint.hpp"
#include "comm/communicator.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "session/session_impl.hpp"
#include "xtrain/logging.hpp"

#ifndef XTRAIN_VERSION
#define XTRAIN_VERSION "unknown"
#endif

namespace xtrain::session {

namespace {

namespace fs = std::filesystem;

constexpr const char* kRngPath = "/state/rng";
constexpr const char* kDataPath = "/state/data";

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// FNV-1a, 64 bits.
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator
  }
};

// Which instance writes each dataset (by its size in bytes): the largest first, each to the least
// loaded instance, so the instances write about the same number of bytes. Deterministic: every
// instance computes the same.
std::vector<int> assignOwners(const std::vector<size_t>& bytes, int instances) {
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::vector<uint64_t> load(static_cast<size_t>(instances), 0);
  std::vector<int> owner(bytes.size(), 0);
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    owner[i] = static_cast<int>(least);
    load[static_cast<size_t>(least)] += bytes[i] + 1;
  }
  return owner;
}

// How long an instance waits for the others at a checkpoint's agreement points: they may be busy
// with slow file work (XTRAIN_CHECKPOINT_TIMEOUT seconds, default 3600).
comm::Milliseconds agreementTimeout() {
  if (const char* s = std::getenv("XTRAIN_CHECKPOINT_TIMEOUT"); s != nullptr && *s != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(s, &end);
    if (end != s && *end == '\0' && seconds > 0) {
      return comm::Milliseconds(static_cast<int64_t>(seconds * 1000));
    }
    throw error("XTRAIN_CHECKPOINT_TIMEOUT must be a positive number of seconds, got '{}'", s);
  }
  return std::chrono::hours(1);
}

// One all-reduce of `values` with `op` (bounded by agreementTimeout()).
void reduceInt64s(comm::Communicator* comm, std::vector<int64_t>& values, CollectiveOperator op) {
  if (comm == nullptr) return;
  comm::AllReduceOptions o;
  o.op = op;
  o.timeout = agreementTimeout();
  o.debugName = "checkpoint/agree";
  comm->allReduceSync(comm::BufferView{values.data(), values.size(), DataType::INT64}, o);
}

// True on every instance when `ok` is true on every instance.
bool allAgree(comm::Communicator* comm, bool ok) {
  std::vector<int64_t> flag{ok ? 1 : 0};
  reduceInt64s(comm, flag, CollectiveOperator::Min);
  return flag[0] == 1;
}

// True on every instance when every instance has the same value: max(v) == -max(-v), in one
// all-reduce.
bool sameEverywhere(comm::Communicator* comm, int64_t value) {
  std::vector<int64_t> both{value, -value};
  reduceInt64s(comm, both, CollectiveOperator::Max);
  return both[0] == -both[1];
}

// Instance 0's host, pid and a fresh random nonce, known to every instance (one all-reduce to which
// the others add zeros): the job's instances write one staging directory, which no other job
// saving into the same directory uses, launcher or not.
checkpoint::StagingOwner agreedStagingOwner(comm::Communicator* comm) {
  const bool first = comm == nullptr || comm->rank() == 0;
  const checkpoint::StagingOwner mine =
      first ? checkpoint::thisProcessAsStagingOwner() : checkpoint::StagingOwner{};
  std::vector<int64_t> v{mine.host, mine.pid, mine.nonce};
  reduceInt64s(comm, v, CollectiveOperator::Add);
  return {static_cast<uint32_t>(v[0]), v[1], static_cast<uint32_t>(v[2])};
}

}  // namespace

std::string SessionImpl::computeGraphFingerprint() const {
  Fnv f;
  for (const auto& [id, op] : graph_->ops()) {
    f.add(op->domain + ":" + op->type);
    for (const auto& in : op->inputs) f.add("<" + in);
    for (const auto& out : op->outputs) f.add(">" + out);
  }
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    f.add(id + " " + graph_->tensor(id).info.toString());
  }
  return checkpoint::graphFingerprint(f.h);
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
  requirePrepared("saveCheckpoint");
  XT_CHECK(config_.training, "saveCheckpoint on an inference session");
  waitForCheckpoint();
  if (path.empty()) throw error("saveCheckpoint: the path is empty");
  comm::Communicator* comm = checkpointComm_.get();
  const fs::path final = fs::absolute(path).lexically_normal();
  // Every instance must see the checkpoint's directory before any collective starts.
  std::string failure;
  if (!fs::is_directory(final.parent_path())) {
    failure = format(
        "saveCheckpoint: the directory '{}' of checkpoint '{}' does not exist{}",
        final.parent_path().string(), path,
        comm ? " on this instance (checkpoints need a file system every instance shares)" : "");
  }
  if (!allAgree(comm, failure.empty())) {
    throw error("{}", failure.empty() ? format("saveCheckpoint: another instance cannot see the "
                                               "directory of '{}' (checkpoints need a file system "
                                               "every instance shares)",
                                               path)
                                      : failure);
  }
  const auto start = std::chrono::steady_clock::now();
  // Where each value comes from: replica 0's buffer, or, for grouped weights and sharded state, the
  // host view made whole by a collective (in the same order on every instance).
  const auto tensors = checkpointTensors();
  std::vector<HostTensor*> sources;
  for (const auto& [id, dataset] : tensors) {
    sources.push_back(&wholeHostValue(id));
  }

  // Who writes what.
  const auto rng = rngState();
  std::vector<size_t> bytes;
  for (const HostTensor* t : sources) bytes.push_back(t->nbytes());
  bytes.push_back(rng.size() * sizeof(uint32_t));
  const bool hasData = !options.dataPosition.empty();
  if (hasData) bytes.push_back(options.dataPosition.size() * sizeof(int64_t));
  const int instances = comm ? comm->size() : 1;
  const int rank = comm ? comm->rank() : 0;
  const std::vector<int> owner = assignOwners(bytes, instances);

  bool asynchronous = options.asynchronous;
  if (asynchronous && !checkpoint::backgroundWritesSupported()) {
    logging::session::warn(
        "saveCheckpoint: this HDF5 library is not thread-safe, so the checkpoint is written "
        "synchronously");
    asynchronous = false;
  }
  // This instance's datasets. Written in the background: copies (training goes on and changes the
  // buffers), into the previous asynchronous save's buffers when they fit, so a save pays one
  // memcpy and no page faults. Written now: the buffers themselves, moved out and back (no copy).
  std::map<std::string, HostTensor> spare;
  if (asynchronous) {
    for (auto& d : asyncDatasets_) spare.emplace(d.path, std::move(d.value));
    asyncDatasets_.clear();
  }
  std::vector<checkpoint::Dataset> mine;
  std::vector<HostTensor*> borrowed;
  try {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (owner[i] != rank) continue;
      HostTensor& source = *sources[i];
      if (!asynchronous) {
        mine.push_back({tensors[i].second, std::move(source)});
        borrowed.push_back(&source);
      } else if (auto it = spare.find(tensors[i].second);
                 it != spare.end() && it->second.info() == source.info()) {
        std::memcpy(it->second.raw(), source.raw(), source.nbytes());
        mine.push_back({tensors[i].second, std::move(it->second)});
      } else {
        mine.push_back({tensors[i].second, source});
      }
    }
    if (owner[tensors.size()] == rank) {
      mine.push_back(
          {kRngPath, HostTensor::fromVector<uint32_t>({static_cast<int64_t>(rng.size())}, rng)});
    }
    if (hasData && owner[tensors.size() + 1] == rank) {
      mine.push_back({kDataPath, HostTensor::fromVector<int64_t>(
                                     {static_cast<int64_t>(options.dataPosition.size())},
                                     options.dataPosition)});
    }
  } catch (const std::exception& e) {
    failure = format("saveCheckpoint '{}': copying the state failed: {}", path, e.what());
  }
  // Gives borrowed buffers back, whatever happens below.
  auto giveBack = [&] {
    for (size_t k = 0; k < borrowed.size(); ++k) *borrowed[k] = std::move(mine[k].value);
    borrowed.clear();
  };

  checkpoint::Attributes a;
  a.step = stepCount_;
  a.epoch = options.epoch;
  a.samplesSeen = options.samplesSeen;
  a.globalReplicationFactor = globalReplicas_;
  a.instances = instances;
  a.optimizerType = ir::describeOptimizer(*config_.optimizer);
  for (const auto& [key, value] : config_.optimizer->valuesOf("")) {
    a.hyperparameters[key] = value.val();  // the defaults
  }
  // The factor in force; with automatic loss scaling also where its rule stands, so a resumed job
  // scales exactly as an uninterrupted one.
  a.hyperparameters["lossScaling"] = lossScaling_;
  if (config_.options.automaticLossScalingSettings.enabled) {
    a.hyperparameters["lossScalingGoodSteps"] = static_cast<double>(goodSteps_);
    a.hyperparameters["lossScalingSkippedSteps"] = static_cast<double>(skippedSteps_);
  }
  a.graphFingerprint = graphFingerprint_;
  a.creationTime = utcNow();
  a.xtrainVersion = XTRAIN_VERSION;

  const std::string staging =
      checkpoint::stagingDirectory(final.string(), agreedStagingOwner(comm));
  // The stages, each closed by an agreement, so every instance takes part in the same collectives
  // whatever fails where.
  auto write = [comm, rank, instances, staging, final = final.string(), a, start](
                   const std::vector<checkpoint::Dataset>& datasets, std::string failure) {
    auto attempt = [&](const std::function<void()>& step) {
      if (!failure.empty()) return;
      try {
        step();
      } catch (const std::exception& e) {
        failure = e.what();
      }
    };
    // Instance 0 creates the staging directory (its name is this save's alone; anything under it
    // would be a leftover of an earlier save of this very process, which is cleared).
    if (rank == 0) {
      attempt([&] {
        fs::remove_all(staging);
        fs::create_directories(staging);
      });
    }
    if (!allAgree(comm, failure.empty())) {
      throw error("saveCheckpoint '{}': {}; the previous checkpoint is intact", final,
                  failure.empty() ? "another instance failed before writing" : failure);
    }
    attempt([&] { checkpoint::writePart(staging, rank, datasets); });
    if (!allAgree(comm, failure.empty())) {
      throw error(
          "saveCheckpoint '{}': writing the parts failed{}; the previous checkpoint is intact",
          final, failure.empty() ? " on another instance" : ": " + failure);
    }
    if (rank == 0) {
      attempt([&] {
        checkpoint::writeIndex(staging, a, instances);
        checkpoint::commit(staging, final);
      });
    }
    if (!allAgree(comm, failure.empty())) {
      throw error("saveCheckpoint '{}': completing the checkpoint failed{}", final,
                  failure.empty() ? " on instance 0" : ": " + failure);
    }
    logging::session::info(
        "checkpoint '{}' saved (step {}) in {:.3f} s", final, a.step,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  if (asynchronous) {
    // asyncError_ is read only after the thread is joined (waitForCheckpoint, the destructor).
    asyncDatasets_ = std::move(mine);
    asyncSave_ = std::thread([this, write = std::move(write), failure]() {
      try {
        write(asyncDatasets_, failure);
      } catch (...) {
        asyncError_ = std::current_exception();
      }
    });
    return;
  }
  try {
    write(mine, failure);
  } catch (...) {
    giveBack();
    throw;
  }
  giveBack();
}

std::optional<CheckpointInfo> SessionImpl::loadLatestCheckpoint(const std::string& directory) {
  requirePrepared("loadLatestCheckpoint");
  XT_CHECK(config_.training, "loadLatestCheckpoint on an inference session");
  waitForCheckpoint();
  comm::Communicator* comm = checkpointComm_.get();
  std::vector<checkpoint::Listed> candidates;
  std::string failure;
  try {
    candidates = checkpoint::resumeOrder(directory);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!allAgree(comm, failure.empty())) {
    throw error("loadLatestCheckpoint '{}': {}", directory,
                failure.empty() ? "another instance could not list the directory" : failure);
  }
  // Every instance tries the same checkpoints in the same order and all agree on each one, so
  // they resume from the same checkpoint, or all start afresh.
  Fnv names;
  for (const auto& c : candidates) names.add(fs::path(c.path).filename().string());
  if (!sameEverywhere(comm, static_cast<int64_t>(names.h >> 1))) {
    throw error(
        "loadLatestCheckpoint '{}': the instances see different checkpoints ({} here); "
        "checkpoints need a file system every instance shares",
        directory, candidates.size());
  }
  // A damaged newest checkpoint (corrupt index, checksum mismatch, truncated or missing part)
  // would stop every restart of the job: fall back to the newest one that verifies.
  std::vector<std::string> skipped;
  for (const auto& candidate : candidates) {
    checkpoint::Contents c;
    std::string damage;
    try {
      c = checkpoint::read(candidate.path);
    } catch (const std::exception& e) {
      damage = e.what();
    }
    if (allAgree(comm, damage.empty())) {
      return loadCheckpointContents(candidate.path, std::move(c), "");
    }
    if (damage.empty()) damage = "another instance could not read it";
    logging::checkpoint::warn(
        "resuming from '{}': skipping checkpoint '{}', which does not verify: {}", directory,
        candidate.path, damage);
    skipped.push_back(format("'{}': {}", candidate.path, damage));
  }
  if (candidates.empty()) return std::nullopt;
  std::string list;
  for (const auto& s : skipped) list += "\n  " + s;
  throw error(
      "loadLatestCheckpoint '{}': none of its {} checkpoints verifies; nothing was loaded:{}",
      directory, candidates.size(), list);
}

void SessionImpl::waitForCheckpoint() {
  if (asyncSave_.joinable()) asyncSave_.join();
  if (asyncError_) {
    auto e = std::exchange(asyncError_, nullptr);
    std::rethrow_exception(e);
  }
}

CheckpointInfo SessionImpl::loadCheckpoint(const std::string& path) {
  requirePrepared("loadCheckpoint");
  XT_CHECK(config_.training, "loadCheckpoint on an inference session");
  waitForCheckpoint();
  checkpoint::Contents c;
  std::string failure;
  try {
    c = checkpoint::read(path);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  return loadCheckpointContents(path, std::move(c), std::move(failure));
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

CheckpointInfo SessionImpl::loadCheckpointContents(const std::string& path, checkpoint::Contents c,
                                                   std::string failure) {
  if (failure.empty()) {
    try {
      checkCheckpointContents(path, c);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // Every instance read the same files; if one failed (a file system error, say) none loads.
  comm::Communicator* comm = checkpointComm_.get();
  if (!allAgree(comm, failure.empty())) {
    if (failure.empty()) {
      throw error("loadCheckpoint '{}': another instance could not load it; nothing was loaded",
                  path);
    }
    throw error("{}", failure);
  }
  // ... and the same checkpoint: its step, time and model agree everywhere.
  Fnv identity;
  identity.add(std::to_string(c.attributes.step) + c.attributes.creationTime +
               c.attributes.graphFingerprint);
  if (!sameEverywhere(comm, static_cast<int64_t>(identity.h >> 1))) {
    throw error(
        "loadCheckpoint '{}': the instances read different checkpoints under this path (step "
        "{} here); checkpoints need a file system every instance shares. Nothing was loaded",
        path, c.attributes.step);
  }
  for (const auto& [id, dataset] : checkpointTensors()) {
    auto it = c.datasets.find(dataset);
    if (it != c.datasets.end()) {
      hostWeights_.at(id) = std::move(it->second);
    } else {
      hostWeights_.at(id).fillZero();
    }
  }
  if (config_.options.automaticLossScalingSettings.enabled) {
    const auto& h = c.attributes.hyperparameters;
    auto value = [&](const char* key, double fallback) {
      auto it = h.find(key);
      return it == h.end() ? fallback : it->second;
    };
    lossScaling_ = static_cast<float>(value("lossScaling", lossScaling_));
    goodSteps_ = static_cast<int64_t>(value("lossScalingGoodSteps", 0));
    skippedSteps_ = static_cast<int64_t>(value("lossScalingSkippedSteps", 0));
    writeHyperValues();
  }
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
