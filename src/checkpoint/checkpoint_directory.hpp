// CheckpointDirectory: the rules of a directory of checkpoints (docs/checkpoint-format.md,
// "Layout", "One job per directory", "Whose `latest` it is"), in one place for everyone who writes
// or reads one: the session's saves and resumes, the xtrain trainer's --checkpoint-dir, xckpt.
//
// Contract:
//  - Names. A checkpoint of step s is "ckpt-<s, at least 8 digits>" (checkpointName). Beside the
//    checkpoints the directory holds `latest`, the lock file, and copies that are not checkpoints
//    (".tmp-" staging, ".old-" retired, ".kept-" set-aside); layout::isReservedName says which
//    names are xtrain's. Every other name is the user's and is never touched.
//  - `latest` names the newest committed checkpoint. It is replaced only when it is what commit()
//    writes there (checkLatestIsReplaceable); a stale or missing `latest` is never fatal to a
//    reader: newestComplete() and resumeOrder() fall back to the highest step.
//  - Listing and pruning only ever look at entries directly in the directory; pruning removes
//    nothing xtrain did not write, never the checkpoint `latest` names, never an incomplete one,
//    and never a staging directory of a live job. Call prune() from one instance of a job only.
//  - One job writes into a directory at a time: it holds lock() while it trains.
// The object is only a path: it holds no state of the directory, which other processes change, so
// every call looks again. Methods throw CheckpointError naming the path and what is wrong.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::checkpoint {

// A checkpoint as a directory listing finds it.
struct Listed {
  std::string path;  // the checkpoint's directory
  int64_t step = 0;
  std::string creationTime;
  uint64_t bytes = 0;     // on disk, parts included
  bool complete = false;  // its index and every part are present and its attributes readable
  std::string problem;    // the first problem found when not complete
};

// Thrown by CheckpointDirectory::lock() when another process holds the directory's lock.
class DirectoryInUse : public CheckpointError {
 public:
  DirectoryInUse(std::string lockFile, std::string holder);
  const std::string& lockFile() const { return lockFile_; }
  // The pid the holder wrote into the lock file, or "?" when it cannot be read.
  const std::string& holder() const { return holder_; }

 private:
  std::string lockFile_, holder_;
};

class CheckpointDirectory {
 public:
  explicit CheckpointDirectory(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  // <path>/ckpt-<step>: where the checkpoint of `step` is saved.
  std::string checkpointPath(int64_t step) const;

  // The name `latest` holds, or "" when it is absent, unreadable or blank.
  std::string latestName() const;
  // Throws CheckpointError, naming the file, unless a save into this directory may replace its
  // `latest`: it is absent, or it is what pointLatestAt() writes there, a regular file holding one
  // name on one line that is a checkpoint's name (ckpt-<step>) or names a checkpoint xtrain wrote
  // in the directory (one with a seal). A user's own file named `latest` beside a checkpoint saved
  // as DIR/run1 is never replaced.
  void checkLatestIsReplaceable() const;
  // Points `latest` at the entry `name` of the directory (atomically and durably replaced).
  void pointLatestAt(const std::string& name) const;

  // The checkpoints, oldest first (staging, retired and set-aside copies excluded); empty when the
  // directory does not exist.
  std::vector<Listed> list() const;
  // The newest complete checkpoint (the one `latest` names when it is complete, else the highest
  // complete step), or nullopt when there is none.
  std::optional<std::string> newestComplete() const;
  // The checkpoints in the order a resume tries them: the one `latest` names first, then the
  // others newest first (incomplete and damaged ones included: the caller reads each and says why
  // it skips it). A complete checkpoint that an interrupted replacement left under its staging or
  // retired name, with its own name missing, is a candidate where it is (prune() puts it back).
  std::vector<Listed> resumeOrder() const;
  // Staging directories (saves in progress, or killed midway), which list() leaves out.
  size_t stagingCount() const;
  // Removes all but the newest `keep` complete checkpoints, and staging directories left by killed
  // jobs (not the one named by `activeStaging`, nor one whose tag names a process alive on this
  // host), and temporary copies of `latest` left by killed processes of this host. Only removes
  // what xtrain wrote: a checkpoint without a seal (format version 1, or not written by xtrain) is
  // kept with a warning, and a leftover holding files xtrain does not write is kept too. First it
  // puts back a complete checkpoint an interrupted replacement left under its staging or retired
  // name (see resumeOrder). `keep` < 1 throws.
  void prune(int keep, const std::string& activeStaging = "") const;

  // An exclusive flock(2) on <path>/.xtrain-lock, released by the kernel when the process ends
  // however it ends (nothing stale is left behind), or when the Lock is destroyed. Default: holds
  // nothing.
  class Lock {
   public:
    Lock() = default;
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    Lock(Lock&& other) noexcept;
    Lock& operator=(Lock&& other) noexcept;
    ~Lock();

   private:
    friend class CheckpointDirectory;
    int fd_ = -1;
  };
  // Takes the lock, writing this process's pid into the lock file for another job's message.
  // Throws DirectoryInUse when another holds it (another process, or another Lock of this one),
  // CheckpointError when the lock file cannot be created.
  Lock lock() const;

 private:
  std::string path_;
};

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
