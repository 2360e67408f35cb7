// CheckpointCoordinator: how the instances of a job save and load one checkpoint together
// (docs/checkpoint-format.md): who writes which dataset, the staged write and its commit, and the
// agreements that make every instance take part in the same collectives whatever fails where, so
// that a checkpoint is written whole or not at all and all instances load the same one or none.
//
// It knows datasets, not sessions: the session gives it the complete host views (which the
// replication layer made whole) under their dataset paths, and checks what it reads.
//
// Every method that agrees must be called by every instance in the same order. Agreements are
// bounded by XTRAIN_CHECKPOINT_TIMEOUT seconds (default 3600: the others may be busy with slow file
// work). Not thread-safe: one call at a time (an asynchronous save runs on its own thread until
// wait()).
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::session {

class CheckpointCoordinator {
 public:
  CheckpointCoordinator() = default;
  // Joins an asynchronous save still running; its failure is logged (nobody is left to throw to).
  ~CheckpointCoordinator();
  CheckpointCoordinator(const CheckpointCoordinator&) = delete;
  CheckpointCoordinator& operator=(const CheckpointCoordinator&) = delete;

  // The instances' communicator for checkpoints, once the session joined the others (a
  // communicator of its own, so an asynchronous save's collectives never interleave with
  // training's). Without one, the job has one instance.
  void setCommunicator(std::shared_ptr<comm::Communicator> comm);

  // Waits for an asynchronous save; rethrows its failure.
  void wait();

  // Before anything is gathered for a save to `path`: throws on every instance unless every
  // instance sees its directory.
  void checkDirectory(const std::string& path);

  struct Source {
    std::string dataset;  // "/weights/..."
    HostTensor* value;    // borrowed: moved out and back while a synchronous save writes it
  };
  // Writes the checkpoint `path`: `sources` and `owned` (the same list on every instance), each
  // dataset by one instance (the largest first, each to the least loaded instance), into a staging
  // directory that instance 0 commits with `attributes` (creation time and version are set here).
  // Asynchronous (when HDF5 allows it): the values are copied and written on a thread; wait() or
  // the next call collects the outcome. Throws, on every instance, when any instance failed; the
  // previous checkpoint is then intact. `started`: for the log line's duration.
  void save(const std::string& path, const std::vector<Source>& sources,
            std::vector<checkpoint::Dataset> owned, checkpoint::Attributes attributes,
            bool asynchronous, std::chrono::steady_clock::time_point started);

  // Throws naming the first way a checkpoint does not fit the session.
  using Check = std::function<void(const std::string& path, const checkpoint::Contents&)>;
  // Reads the checkpoint `path` on every instance and checks it; returns it when every instance
  // could and all read the same checkpoint, else throws on every instance (nothing to load).
  checkpoint::Contents load(const std::string& path, const Check& check);
  // The newest checkpoint of `directory` that verifies on every instance (a damaged newest one is
  // skipped with a warning), loaded as load() does; nullopt when the directory has none. Throws
  // when none of them verifies.
  std::optional<std::pair<std::string, checkpoint::Contents>> loadLatest(
      const std::string& directory, const Check& check);

 private:
  // The rest of load() once this instance read `c` (or failed to: `failure`).
  checkpoint::Contents agreeOnContents(const std::string& path, checkpoint::Contents c,
                                       std::string failure, const Check& check);

  std::shared_ptr<comm::Communicator> comm_;
  std::thread asyncSave_;
  // What the asynchronous save writes (used only by its thread until joined; the next asynchronous
  // save reuses the buffers), and how it failed.
  std::vector<checkpoint::Dataset> asyncDatasets_;
  std::exception_ptr asyncError_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
