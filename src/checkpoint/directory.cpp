// A checkpoint directory as a whole: listing, choosing the one to resume from, pruning.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/inspection.hpp"
#include "checkpoint/layout.hpp"

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
    leftovers.push_back(entry.path());
  }
  for (const auto& dir : leftovers) retireAndRemove(dir);
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
    retireAndRemove(complete[i].path);
  }
  fsyncPath(checkpointDir);
}

}  // namespace xtrain::checkpoint
