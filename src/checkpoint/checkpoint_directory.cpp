// CheckpointDirectory as a whole: listing, choosing the one to resume from, pruning. (`latest` is
// latest_pointer.cpp's, the lock directory_lock.cpp's.)
#include "checkpoint/checkpoint_directory.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>

#include "checkpoint/durable_files.hpp"
#include "checkpoint/inspection.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/seal.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

namespace {

bool isStaging(const std::string& name) {
  return name.find(layout::kStagingMarker) != std::string::npos;
}
bool isRetired(const std::string& name) {
  return name.find(layout::kRetiredMarker) != std::string::npos;
}

bool samePath(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// Removes a directory so that a crash midway leaves nothing that looks like a checkpoint: renamed
// out of the checkpoint namespace first (atomic), then deleted.
void retireAndRemove(const fs::path& dir) {
  fs::path target = dir;
  const std::string name = dir.filename().string();
  if (!isStaging(name) && !isRetired(name)) {
    target = dir.parent_path() / (name + layout::kRetiredMarker + std::to_string(::getpid()));
    std::error_code ec;
    fs::rename(dir, target, ec);
    if (ec) throw CheckpointError("prune: cannot rename '{}': {}", dir.string(), ec.message());
  }
  std::error_code ec;
  fs::remove_all(target, ec);
  if (ec) throw CheckpointError("prune: cannot remove '{}': {}", target.string(), ec.message());
}

// True when every entry of `dir` is a file xtrain writes into a checkpoint or its staging
// directory (parts, index, seal, and the seal's ".tmp-..." while it is written): a leftover of a
// save or a replacement, not a user's directory that happens to match "ckpt-*".
bool holdsOnlyCheckpointFiles(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec)) return false;
    if (const auto tmp = name.find(".tmp-"); tmp != std::string::npos) name.resize(tmp);
    if (name != layout::kIndexFile && name != layout::kSealFile && !layout::partIndex(name)) {
      return false;
    }
  }
  return !ec;
}

// A staging or retired directory that prune may remove: named "ckpt-<step>.tmp-..." or
// "ckpt-<step>.old-...", holding only checkpoint files, and not being written by a live job.
bool isRemovableLeftover(const fs::path& dir) {
  const std::string name = dir.filename().string();
  const auto marker =
      std::min(name.find(layout::kStagingMarker), name.find(layout::kRetiredMarker));
  if (marker == std::string::npos || !layout::checkpointStep(name.substr(0, marker))) return false;
  if (!holdsOnlyCheckpointFiles(dir)) {
    logging::checkpoint::warn("prune: keeping '{}': it holds files xtrain does not write",
                              dir.string());
    return false;
  }
  // Another job saving into the same directory right now (unique staging names since format 2).
  const auto owner = stagingOwnerOf(name);
  return !(isStaging(name) && owner && owner->pid != ::getpid() && ownerAlive(*owner));
}

// The checkpoint name a staging or retired directory belongs to ("ckpt-<step>"), or "".
std::string finalNameOf(const std::string& name) {
  const auto marker =
      std::min(name.find(layout::kStagingMarker), name.find(layout::kRetiredMarker));
  if (marker == std::string::npos) return "";
  const std::string base = name.substr(0, marker);
  const auto step = layout::checkpointStep(base);
  return step && base == checkpointName(*step) ? base : "";
}

// A replacement of a checkpoint is two renames where the file system cannot exchange directories
// (NFS): the old copy to "ckpt-N.old-<pid>", then the staged one to "ckpt-N". A crash between them
// leaves no "ckpt-N" while `latest` may name it, and both copies look like leftovers. This finds,
// for each missing checkpoint, the complete and sealed copy to take its place: the staged (newer)
// one when it is complete, else the retired one. By final name ("ckpt-N").
std::map<std::string, fs::path> orphanedCopies(const std::string& checkpointDir,
                                               const std::string& activeStaging) {
  std::map<std::string, std::vector<fs::path>> candidates;  // final name -> staged, then retired
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpointDir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string final = finalNameOf(name);
    if (final.empty() || !entry.is_directory(ec)) continue;
    if (!activeStaging.empty() && samePath(entry.path(), activeStaging)) continue;
    if (fs::exists(fs::path(checkpointDir) / final, ec)) continue;
    if (!isRemovableLeftover(entry.path())) continue;  // e.g. a live job's staging directory
    auto& list = candidates[final];
    list.insert(isStaging(name) ? list.begin() : list.end(), entry.path());
  }
  std::map<std::string, fs::path> out;
  for (const auto& [final, dirs] : candidates) {
    for (const auto& dir : dirs) {
      if (isSealed(dir.string()) && inspect(dir.string(), Depth::Parts).problems.empty()) {
        out.emplace(final, dir);
        break;
      }
    }
  }
  return out;
}

// Puts each orphaned copy back in its checkpoint's place (prune, before removing leftovers).
void restoreOrphanedCopies(const std::string& checkpointDir, const std::string& activeStaging) {
  for (const auto& [final, dir] : orphanedCopies(checkpointDir, activeStaging)) {
    const fs::path target = fs::path(checkpointDir) / final;
    std::error_code ec;
    fs::rename(dir, target, ec);
    if (ec) {
      throw CheckpointError("prune: cannot put '{}' back as '{}': {}", dir.string(),
                            target.string(), ec.message());
    }
    logging::checkpoint::warn(
        "prune: '{}' was missing (a replacement was interrupted); the complete copy '{}' is put "
        "back in its place",
        target.string(), dir.filename().string());
  }
}

// "latest.tmp-<host>-<pid>-<nonce>" files (replaceFileDurably) whose writer, a process of this
// host, is gone: it was killed between writing and renaming. A live writer's is left alone.
void removeStaleLatestCopies(const std::string& checkpointDir) {
  const std::string prefix = std::string(layout::kLatestFile) + layout::kStagingMarker;
  std::vector<fs::path> stale;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpointDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_regular_file(ec)) continue;
    const auto owner = stagingOwnerOf(name);
    if (owner && ownerGone(*owner)) stale.push_back(entry.path());
  }
  for (const auto& file : stale) fs::remove(file, ec);  // a failure only leaves a small file
}

}  // namespace

std::string CheckpointDirectory::checkpointPath(int64_t step) const {
  return (fs::path(path_) / checkpointName(step)).string();
}

std::vector<Listed> CheckpointDirectory::list() const {
  std::error_code ec;
  if (!fs::exists(path_, ec)) return {};
  if (!fs::is_directory(path_, ec)) {
    throw CheckpointError("checkpoint directory '{}' is not a directory", path_);
  }
  std::vector<Listed> out;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    const std::string name = entry.path().filename().string();
    const auto step = layout::checkpointStep(name);
    // Staging, retired and foreign entries are skipped, and so is a name that is not the canonical
    // one of its step ("ckpt-10", say a user's copy): xtrain never wrote it, so never prunes it.
    // (is_directory with an error code: a symlink loop is skipped, not thrown.)
    std::error_code typeEc;
    if (!step || name != checkpointName(*step) || !entry.is_directory(typeEc)) continue;
    Listed l;
    l.path = entry.path().string();
    l.step = *step;
    l.bytes = bytesUnder(l.path);
    const Inspection inspection = inspect(l.path, Depth::Parts);
    l.complete = inspection.problems.empty();
    if (l.complete) {
      l.step = inspection.attributes.step;
      l.creationTime = inspection.attributes.creationTime;
    } else {
      l.problem = inspection.problems.front();
    }
    out.push_back(std::move(l));
  }
  if (ec) throw CheckpointError("cannot list '{}': {}", path_, ec.message());
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return out;
}

std::optional<std::string> CheckpointDirectory::newestComplete() const {
  const std::vector<Listed> all = list();
  const std::string latest = latestName();
  const Listed* best = nullptr;
  for (const auto& l : all) {
    if (!l.complete) continue;
    if (!latest.empty() && baseName(l.path) == latest) return l.path;
    best = &l;  // `all` is sorted by step: the last complete one is the newest
  }
  if (best == nullptr) return std::nullopt;
  return best->path;
}

std::vector<Listed> CheckpointDirectory::resumeOrder() const {
  std::vector<Listed> all = list();
  // A checkpoint an interrupted replacement left out of its place is read where it is (prune puts
  // it back; a resume only reads), under its checkpoint's name for `latest`.
  std::error_code ec;
  if (fs::is_directory(path_, ec)) {
    for (const auto& [final, dir] : orphanedCopies(path_, "")) {
      const Inspection inspection = inspect(dir.string(), Depth::Parts);
      Listed l;
      l.path = dir.string();
      l.step = inspection.attributes.step;
      l.bytes = bytesUnder(l.path);
      l.complete = true;
      l.creationTime = inspection.attributes.creationTime;
      all.push_back(std::move(l));
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const Listed& a, const Listed& b) { return a.step < b.step; });
  }
  std::reverse(all.begin(), all.end());  // newest first
  const std::string latest = latestName();
  const auto named = std::find_if(all.begin(), all.end(), [&](const Listed& l) {
    const std::string name = baseName(l.path);
    return name == latest || finalNameOf(name) == latest;
  });
  if (named != all.end()) {
    std::rotate(all.begin(), named, named + 1);
  } else if (!latest.empty() && latest != "." && latest != ".." &&
             latest.find('/') == std::string::npos && !layout::isReservedName(latest)) {
    // `latest` names a checkpoint saved under a name of the caller's choosing
    // (saveCheckpoint(DIR/run1)): list() does not see it, but it is the newest commit, so a
    // resume that skipped it would silently lose the steps since the last ckpt-<step>.
    const fs::path named = fs::path(path_) / latest;
    std::error_code typeEc;
    if (fs::is_directory(named, typeEc)) {
      const Inspection inspection = inspect(named.string(), Depth::Parts);
      Listed l;
      l.path = named.string();
      l.step = inspection.attributes.step;
      l.bytes = bytesUnder(l.path);
      l.complete = inspection.problems.empty();
      if (l.complete) {
        l.creationTime = inspection.attributes.creationTime;
      } else {
        l.problem = inspection.problems.front();
      }
      all.insert(all.begin(), std::move(l));
    }
  }
  return all;
}

size_t CheckpointDirectory::stagingCount() const {
  size_t n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    std::error_code typeEc;
    if (entry.is_directory(typeEc) && isStaging(entry.path().filename().string())) ++n;
  }
  return n;
}

void CheckpointDirectory::prune(int keep, const std::string& activeStaging) const {
  if (keep < 1) {
    throw CheckpointError(
        "prune: keep must be at least 1 (got {}); removing every checkpoint is "
        "never what is wanted",
        keep);
  }
  std::error_code ec;
  if (!fs::is_directory(path_, ec)) return;
  restoreOrphanedCopies(path_, activeStaging);
  // Leftovers of killed saves and replacements (collected first: removing while iterating a
  // directory is unspecified).
  std::vector<fs::path> leftovers;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code typeEc;
    if (!entry.is_directory(typeEc) || !(isStaging(name) || isRetired(name))) continue;
    if (!activeStaging.empty() && samePath(entry.path(), activeStaging)) continue;
    if (isRemovableLeftover(entry.path())) leftovers.push_back(entry.path());
  }
  for (const auto& dir : leftovers) retireAndRemove(dir);
  removeStaleLatestCopies(path_);
  // Complete checkpoints beyond the newest `keep`; the one `latest` names always stays.
  const std::string latest = latestName();
  std::vector<Listed> complete;
  for (auto& l : list()) {
    if (l.complete) complete.push_back(std::move(l));
  }
  const size_t remove =
      complete.size() > static_cast<size_t>(keep) ? complete.size() - static_cast<size_t>(keep) : 0;
  for (size_t i = 0; i < remove; ++i) {
    if (baseName(complete[i].path) == latest) continue;
    // Only what xtrain committed: the seal is its mark (see seal.hpp).
    if (!isSealed(complete[i].path)) {
      logging::checkpoint::warn(
          "prune: keeping '{}': it has no {} (written by an xtrain older than format version 2, or "
          "not by xtrain); remove it yourself if it is not needed",
          complete[i].path, layout::kSealFile);
      continue;
    }
    retireAndRemove(complete[i].path);
  }
  fsyncPath(path_);
}

}  // namespace xtrain::checkpoint
