#include "session/checkpoint_coordinator.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>

#include "checkpoint/checkpoint_directory.hpp"
#include "comm/agreement.hpp"
#include "comm/communicator.hpp"
#include "common/env_value.hpp"
#include "common/timeline.hpp"
#include "xtrain/logging.hpp"

#ifndef XTRAIN_VERSION
#define XTRAIN_VERSION "unknown"
#endif

namespace xtrain::session {

namespace {

namespace fs = std::filesystem;

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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
  return readEnvDuration("XTRAIN_CHECKPOINT_TIMEOUT").value_or(std::chrono::hours(1));
}

// The agreements of a checkpoint, named "checkpoint/agree" in traces (bounded by
// agreementTimeout()).
comm::AgreementOptions checkpointAgreement() {
  comm::AgreementOptions o;
  o.timeout = agreementTimeout();
  o.debugName = "checkpoint/agree";
  return o;
}

// True on every instance when `ok` is true on every instance.
bool allAgree(comm::Communicator* comm, bool ok) {
  return comm::allTrue(comm, ok, checkpointAgreement());
}

// True on every instance when every instance has the same value.
bool sameOnEveryInstance(comm::Communicator* comm, int64_t value) {
  return comm::sameEverywhere(comm, value, checkpointAgreement());
}

// Instance 0's host, pid and a fresh random nonce, known to every instance (one all-reduce to which
// the others add zeros): the job's instances write one staging directory, which no other job
// saving into the same directory uses, launcher or not.
checkpoint::StagingOwner agreedStagingOwner(comm::Communicator* comm) {
  const bool first = comm == nullptr || comm->rank() == 0;
  const checkpoint::StagingOwner mine =
      first ? checkpoint::thisProcessAsStagingOwner() : checkpoint::StagingOwner{};
  const std::vector<int64_t> v =
      comm::sumOf(comm, {mine.host, mine.pid, mine.nonce}, checkpointAgreement());
  return {static_cast<uint32_t>(v[0]), v[1], static_cast<uint32_t>(v[2])};
}

}  // namespace

CheckpointCoordinator::~CheckpointCoordinator() {
  if (asyncSave_.joinable()) asyncSave_.join();
  if (asyncError_) {
    try {
      std::rethrow_exception(asyncError_);
    } catch (const std::exception& e) {
      logging::session::err("an asynchronous checkpoint save failed: {}", e.what());
    }
  }
}

void CheckpointCoordinator::setCommunicator(std::shared_ptr<comm::Communicator> comm) {
  comm_ = std::move(comm);
}

void CheckpointCoordinator::wait() {
  if (asyncSave_.joinable()) asyncSave_.join();
  if (asyncError_) {
    auto e = std::exchange(asyncError_, nullptr);
    std::rethrow_exception(e);
  }
}

void CheckpointCoordinator::checkDirectory(const std::string& path) {
  const fs::path final = fs::absolute(path).lexically_normal();
  comm::Communicator* comm = comm_.get();
  std::string failure;
  if (!fs::is_directory(final.parent_path())) {
    failure = format(
        "saveCheckpoint: the directory '{}' of checkpoint '{}' does not exist{}",
        final.parent_path().string(), path,
        comm ? " on this instance (checkpoints need a file system every instance shares)" : "");
  } else if (!comm || comm->rank() == 0) {
    // The instance that commits: `latest` beside the checkpoint must be xtrain's to replace.
    try {
      checkpoint::CheckpointDirectory(final.parent_path().string()).checkLatestIsReplaceable();
    } catch (const checkpoint::CheckpointError& e) {
      failure = format("saveCheckpoint '{}': {}", path, e.what());
    }
  }
  if (!allAgree(comm, failure.empty())) {
    throw error("{}", failure.empty() ? format("saveCheckpoint: another instance cannot save '{}' "
                                               "(it cannot see the directory, which checkpoints "
                                               "need on a file system every instance shares, or "
                                               "refused the directory's `latest`: see its log)",
                                               path)
                                      : failure);
  }
}

void CheckpointCoordinator::save(const std::string& path, const std::vector<Source>& sources,
                                 std::vector<checkpoint::Dataset> owned,
                                 checkpoint::Attributes attributes, bool asynchronous,
                                 std::chrono::steady_clock::time_point started) {
  wait();
  comm::Communicator* comm = comm_.get();
  const std::string final = fs::absolute(path).lexically_normal().string();
  const int instances = comm ? comm->size() : 1;
  const int rank = comm ? comm->rank() : 0;
  // Who writes what: sources first, then the owned datasets (the same order on every instance).
  std::vector<size_t> bytes;
  for (const Source& s : sources) bytes.push_back(s.value->nbytes());
  for (const auto& d : owned) bytes.push_back(d.value.nbytes());
  const std::vector<int> owner = assignOwners(bytes, instances);

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
  std::string failure;
  try {
    for (size_t i = 0; i < sources.size(); ++i) {
      if (owner[i] != rank) continue;
      HostTensor& source = *sources[i].value;
      if (!asynchronous) {
        mine.push_back({sources[i].dataset, std::move(source)});
        borrowed.push_back(&source);
      } else if (auto it = spare.find(sources[i].dataset);
                 it != spare.end() && it->second.info() == source.info()) {
        std::memcpy(it->second.raw(), source.raw(), source.nbytes());
        mine.push_back({sources[i].dataset, std::move(it->second)});
      } else {
        mine.push_back({sources[i].dataset, source});
      }
    }
    for (size_t k = 0; k < owned.size(); ++k) {
      if (owner[sources.size() + k] == rank) mine.push_back(std::move(owned[k]));
    }
  } catch (const std::exception& e) {
    failure = format("saveCheckpoint '{}': copying the state failed: {}", path, e.what());
  }
  // Gives borrowed buffers back, whatever happens below.
  auto giveBack = [&] {
    for (size_t k = 0; k < borrowed.size(); ++k) *borrowed[k] = std::move(mine[k].value);
    borrowed.clear();
  };

  attributes.instances = instances;
  attributes.creationTime = utcNow();
  attributes.xtrainVersion = XTRAIN_VERSION;
  const std::string staging = checkpoint::stagingDirectory(final, agreedStagingOwner(comm));
  // The stages, each closed by an agreement, so every instance takes part in the same collectives
  // whatever fails where.
  auto write = [comm, rank, instances, staging, final, a = std::move(attributes), started](
                   const std::vector<checkpoint::Dataset>& datasets, std::string failure) {
    timeline::Span traced(timeline::Category::Checkpoint, "write checkpoint");
    traced.arg("datasets", static_cast<int64_t>(datasets.size())).text("path", final);
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
      throw runtime_error("saveCheckpoint '{}': {}; the previous checkpoint is intact", final,
                          failure.empty() ? "another instance failed before writing" : failure);
    }
    attempt([&] { checkpoint::writePart(staging, rank, datasets); });
    if (!allAgree(comm, failure.empty())) {
      throw runtime_error(
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
      throw runtime_error("saveCheckpoint '{}': completing the checkpoint failed{}", final,
                          failure.empty() ? " on instance 0" : ": " + failure);
    }
    logging::session::info(
        "checkpoint '{}' saved (step {}) in {:.3f} s", final, a.step,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  };
  if (asynchronous) {
    // asyncError_ is read only after the thread is joined (wait(), the destructor).
    asyncDatasets_ = std::move(mine);
    asyncSave_ = std::thread([this, write = std::move(write), failure]() {
      const timeline::TrackScope track(timeline::kCheckpointWriterTrack, "checkpoint writer");
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

checkpoint::Contents CheckpointCoordinator::load(const std::string& path, const Check& check) {
  wait();
  checkpoint::Contents c;
  std::string failure;
  try {
    c = checkpoint::read(path);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  return agreeOnContents(path, std::move(c), std::move(failure), check);
}

checkpoint::Contents CheckpointCoordinator::agreeOnContents(const std::string& path,
                                                            checkpoint::Contents c,
                                                            std::string failure,
                                                            const Check& check) {
  if (failure.empty()) {
    try {
      check(path, c);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // Every instance read the same files; if one failed (a file system error, say) none loads.
  comm::Communicator* comm = comm_.get();
  if (!allAgree(comm, failure.empty())) {
    if (failure.empty()) {
      throw error("loadCheckpoint '{}': another instance could not load it; nothing was loaded",
                  path);
    }
    throw error("{}", failure);
  }
  // ... and the same checkpoint: its step, time and model agree everywhere.
  checkpoint::Fnv1a64 identity;
  identity.add(std::to_string(c.attributes.step) + c.attributes.creationTime +
               c.attributes.graphFingerprint);
  if (!sameOnEveryInstance(comm, static_cast<int64_t>(identity.value >> 1))) {
    throw error(
        "loadCheckpoint '{}': the instances read different checkpoints under this path (step "
        "{} here); checkpoints need a file system every instance shares. Nothing was loaded",
        path, c.attributes.step);
  }
  return c;
}

std::optional<std::pair<std::string, checkpoint::Contents>> CheckpointCoordinator::loadLatest(
    const std::string& directory, const Check& check) {
  wait();
  comm::Communicator* comm = comm_.get();
  std::vector<checkpoint::Listed> candidates;
  std::string failure;
  try {
    candidates = checkpoint::CheckpointDirectory(directory).resumeOrder();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!allAgree(comm, failure.empty())) {
    throw error("loadLatestCheckpoint '{}': {}", directory,
                failure.empty() ? "another instance could not list the directory" : failure);
  }
  // Every instance tries the same checkpoints in the same order and all agree on each one, so
  // they resume from the same checkpoint, or all start afresh.
  checkpoint::Fnv1a64 names;
  for (const auto& c : candidates) names.add(fs::path(c.path).filename().string());
  if (!sameOnEveryInstance(comm, static_cast<int64_t>(names.value >> 1))) {
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
      return std::pair{candidate.path, agreeOnContents(candidate.path, std::move(c), "", check)};
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

}  // namespace xtrain::session
