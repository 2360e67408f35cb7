// A checkpoint directory as a whole: listing, choosing the one to resume from, pruning.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/inspection.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/seal.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

namespace {

// The checkpoint name `latest` holds, or "" when it is absent or unreadable.
std::string latestName(const std::string& checkpointDir) {
  std::ifstream in(fs::path(checkpointDir) / layout::kLatestFile);
  std::string name;
  if (!(in >> name)) return "";
  return name;
}

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

std::vector<Listed> list(const std::string& checkpointDir) {
  std::error_code ec;
  if (!fs::exists(checkpointDir, ec)) return {};
  if (!fs::is_directory(checkpointDir, ec)) {
    throw CheckpointError("checkpoint directory '{}' is not a directory", checkpointDir);
  }
  std::vector<Listed> out;
  for (const auto& entry : fs::directory_iterator(checkpointDir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto step = layout::checkpointStep(name);
    if (!step || !entry.is_directory()) continue;  // staging, retired and foreign entries
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
  if (ec) throw CheckpointError("cannot list '{}': {}", checkpointDir, ec.message());
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return out;
}

std::optional<std::string> latestComplete(const std::string& checkpointDir) {
  const std::vector<Listed> all = list(checkpointDir);
  const std::string latest = latestName(checkpointDir);
  const Listed* best = nullptr;
  for (const auto& l : all) {
    if (!l.complete) continue;
    if (!latest.empty() && baseName(l.path) == latest) return l.path;
    best = &l;  // `all` is sorted by step: the last complete one is the newest
  }
  if (best == nullptr) return std::nullopt;
  return best->path;
}

std::vector<Listed> resumeOrder(const std::string& checkpointDir) {
  std::vector<Listed> all = list(checkpointDir);
  std::reverse(all.begin(), all.end());  // newest first
  const std::string latest = latestName(checkpointDir);
  const auto named = std::find_if(all.begin(), all.end(),
                                  [&](const Listed& l) { return baseName(l.path) == latest; });
  if (named != all.end()) std::rotate(all.begin(), named, named + 1);
  return all;
}

void checkLatestIsReplaceable(const std::string& checkpointDir) {
  const std::string file = (fs::path(checkpointDir) / layout::kLatestFile).string();
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw CheckpointError("cannot examine '{}': {}", file, std::strerror(errno));
  }
  const auto refuse = [&](const std::string& why) {
    throw CheckpointError(
        "'{}' is not a `latest` pointer xtrain wrote ({}): saving a checkpoint into '{}' would "
        "replace it. Move it away (or remove it, if it is xtrain's and damaged), or save "
        "checkpoints into a directory of their own",
        file, why, checkpointDir);
  };
  if (S_ISLNK(st.st_mode)) refuse("it is a symbolic link");
  if (!S_ISREG(st.st_mode)) refuse("it is not a regular file");
  // One name of at most 255 bytes and its newline, as commit() writes it.
  constexpr off_t kMaxBytes = 256;
  if (st.st_size > kMaxBytes) {
    refuse(format("it holds {} bytes, more than one checkpoint name", st.st_size));
  }
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) refuse("it cannot be read");
  const bool oneLine = text.size() > 1 && text.back() == '\n';
  const std::string name = oneLine ? text.substr(0, text.size() - 1) : text;
  const bool plainName =
      oneLine && name != "." && name != ".." && std::none_of(name.begin(), name.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < ' ' || u == 0x7f || c == '/';  // a space is a legal name byte
      });
  if (!plainName) refuse("it does not hold one checkpoint name on a line of its own");
  // A checkpoint's name (its directory may be gone: pruned by hand), or a checkpoint xtrain
  // committed under a name of the caller's choosing (saveCheckpoint(DIR/run1)).
  if (layout::checkpointStep(name) || isSealed((fs::path(checkpointDir) / name).string())) return;
  refuse(format("it names '{}', which is neither ckpt-<step> nor a checkpoint xtrain wrote there",
                name));
}

void prune(const std::string& checkpointDir, int keep, const std::string& activeStaging) {
  if (keep < 1) {
    throw CheckpointError(
        "prune: keep must be at least 1 (got {}); removing every checkpoint is "
        "never what is wanted",
        keep);
  }
  std::error_code ec;
  if (!fs::is_directory(checkpointDir, ec)) return;
  // Leftovers of killed saves and replacements (collected first: removing while iterating a
  // directory is unspecified).
  std::vector<fs::path> leftovers;
  for (const auto& entry : fs::directory_iterator(checkpointDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !(isStaging(name) || isRetired(name))) continue;
    if (!activeStaging.empty() && samePath(entry.path(), activeStaging)) continue;
    if (isRemovableLeftover(entry.path())) leftovers.push_back(entry.path());
  }
  for (const auto& dir : leftovers) retireAndRemove(dir);
  removeStaleLatestCopies(checkpointDir);
  // Complete checkpoints beyond the newest `keep`; the one `latest` names always stays.
  const std::string latest = latestName(checkpointDir);
  std::vector<Listed> complete;
  for (auto& l : list(checkpointDir)) {
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
  fsyncPath(checkpointDir);
}

}  // namespace xtrain::checkpoint
