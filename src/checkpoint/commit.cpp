// Stage 3 of a save: publish the staged checkpoint. The order of the steps is what makes a save
// killed at any moment harmless: nothing is visible under the final name before every byte of it is
// durable, and `latest` moves only after the directory it names is in place.
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_directory.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/seal.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

namespace {

void renameOrThrow(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    throw CheckpointError("cannot rename '{}' to '{}': {}", from, to, std::strerror(errno));
  }
}

// Swaps two directories in one step (Linux renameat2). False when the file system cannot.
bool exchange(const std::string& a, const std::string& b) {
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
    throw CheckpointError("cannot exchange '{}' and '{}': {}", a, b, std::strerror(errno));
  }
#endif
  return false;
}

void removeOrThrow(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) throw CheckpointError("cannot remove '{}': {}", dir, ec.message());
}

// Moves a directory that is not xtrain's out of the way of a commit (renaming loses nothing):
// "<final>.kept-<pid>", or with a counter when that exists too.
void setAside(const std::string& finalDir) {
  std::string kept = finalDir + layout::kKeptMarker + std::to_string(::getpid());
  for (int n = 1; fs::exists(kept); ++n) {
    kept = finalDir + layout::kKeptMarker + std::to_string(::getpid()) + "-" + std::to_string(n);
  }
  renameOrThrow(finalDir, kept);
  logging::checkpoint::warn(
      "'{}' was not written by xtrain (it has no {}): moved to '{}' instead of being replaced",
      finalDir, layout::kSealFile, kept);
}

// Renames `from` to `to`; false when `to` appeared meanwhile (a non-empty directory).
bool renameUnlessTaken(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return true;
  if (errno == ENOTEMPTY || errno == EEXIST) return false;
  throw CheckpointError("cannot rename '{}' to '{}': {}", from, to, std::strerror(errno));
}

// Puts the staged checkpoint in the place of an existing `finalDir`; returns where the replaced
// copy now is (to be removed once `latest` is written). Only xtrain's own checkpoints are replaced
// (and so deleted): anything else under the name is set aside.
std::string replace(const std::string& stagingDir, const std::string& finalDir) {
  if (!isSealed(finalDir)) setAside(finalDir);
  if (!fs::exists(finalDir)) {
    renameOrThrow(stagingDir, finalDir);
    return "";
  }
  if (exchange(stagingDir, finalDir)) return stagingDir;
  const std::string retired = finalDir + layout::kRetiredMarker + std::to_string(::getpid());
  renameOrThrow(finalDir, retired);
  renameOrThrow(stagingDir, finalDir);
  return retired;
}

// A step after the checkpoint is complete: its failure is a warning, not a failed save.
template <typename F>
void tidyUp(const std::string& finalDir, F&& step) {
  try {
    step();
  } catch (const std::exception& e) {
    logging::checkpoint::warn("checkpoint '{}' is complete, but tidying up after it failed: {}",
                              finalDir, e.what());
  }
}

}  // namespace

void commit(const std::string& stagingDir, const std::string& finalDir) {
  const std::string index = (fs::path(stagingDir) / layout::kIndexFile).string();
  if (!fs::is_regular_file(index)) {
    throw CheckpointError("commit: '{}' has no {} (writeIndex has not run)", stagingDir,
                          layout::kIndexFile);
  }
  if (!fs::is_regular_file(fs::path(stagingDir) / layout::kSealFile)) {
    throw CheckpointError("commit: '{}' has no {} (writeIndex did not finish)", stagingDir,
                          layout::kSealFile);
  }
  const std::string parent = parentDirectory(finalDir);
  if (fs::weakly_canonical(parentDirectory(stagingDir)) != fs::weakly_canonical(parent)) {
    throw CheckpointError("commit: staging '{}' and final '{}' must be in the same directory",
                          stagingDir, finalDir);
  }
  // 1. Every byte of the staged checkpoint and its directory entries reach the disk.
  fsyncDirectoryAndFiles(stagingDir);

  // 2. The final name appears atomically. Re-saving a step replaces the old directory: exchanged in
  //    one step where the file system allows, else moved aside first (a crash in between leaves
  //    the old one as <final>.old-<pid>, removed by prune, and `latest` falls back to the newest
  //    complete checkpoint). Another job saving the same step into the same directory may create
  //    `finalDir` between the check and the rename: then it is replaced like any earlier save.
  const std::string retired = !fs::exists(finalDir) && renameUnlessTaken(stagingDir, finalDir)
                                  ? ""
                                  : replace(stagingDir, finalDir);
  fsyncPath(parent);

  // 3. `latest` names it (atomically replaced), then the replaced copy goes. The checkpoint is
  //    complete from here on: a failure now is a warning, not a failed save (listing and
  //    CheckpointDirectory::newestComplete() fall back to the newest complete checkpoint when
  //    `latest` is stale, and pruning removes a leftover copy).
  tidyUp(finalDir, [&] {
    // Checked before the save too (a file that appeared since is left alone all the same).
    const CheckpointDirectory directory(parent);
    directory.checkLatestIsReplaceable();
    directory.pointLatestAt(baseName(finalDir));
  });
  // Also when `latest` could not be written: the replaced copy must not be left behind.
  if (!retired.empty()) {
    tidyUp(finalDir, [&] {
      removeOrThrow(retired);
      fsyncPath(parent);
    });
  }
}

}  // namespace xtrain::checkpoint
