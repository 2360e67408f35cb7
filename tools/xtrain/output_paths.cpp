#include "output_paths.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/layout.hpp"

namespace xtrain::tools {

namespace {

namespace fs = std::filesystem;

struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileId&) const = default;
};

// The device and inode of what `path` names (symbolic links followed); nullopt when it does not
// exist.
std::optional<FileId> fileId(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The absolute path a write to `text` lands on: `.`, `..` and every symbolic link resolved, a
// dangling last one too (writeOutputFile follows it and creates its target). What does not exist
// yet is kept as written, normalised.
fs::path landingPath(const std::string& text) {
  std::error_code ec;
  fs::path p = fs::absolute(text, ec);
  if (ec) p = text;
  for (int hops = 0; hops < 40; ++hops) {
    const fs::path resolved = fs::weakly_canonical(p, ec);
    p = ec ? p.lexically_normal() : resolved;
    if (ec || !fs::is_symlink(fs::symlink_status(p, ec))) break;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  // "dir/" and "dir" are one directory.
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

// Where `inner` is below `outer`: "." for `outer` itself, nullopt when it is not below it. Both are
// landing paths.
std::optional<fs::path> below(const fs::path& inner, const fs::path& outer) {
  const fs::path rel = inner.lexically_relative(outer);
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  return rel;
}

// A regular file among the entries of `root` that `keep` accepts, or one level below them, whose
// device and inode are `id` (`root` itself when it is a file); nullopt when none is. Two levels are
// all a checkpoint directory has, and all that is read: a mistaken path (`--resume ~`) costs no
// walk of a tree.
template <typename Keep>
std::optional<fs::path> hardLinkUnder(const fs::path& root, const FileId& id, Keep keep) {
  const auto isIt = [&](const fs::directory_entry& e) {
    std::error_code ec;
    return e.is_regular_file(ec) && fileId(e.path()) == id;
  };
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    return fileId(root) == id ? std::optional<fs::path>(root) : std::nullopt;
  }
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!keep(entry.path().filename().string())) continue;
    if (isIt(entry)) return entry.path();
    std::error_code sub;
    if (entry.is_symlink(sub) || !entry.is_directory(sub)) continue;
    for (const auto& file : fs::directory_iterator(entry.path(), sub)) {
      if (isIt(file)) return file.path();
    }
  }
  return std::nullopt;
}

struct Output {
  std::string flag;
  std::string path;
  fs::path lands;
  std::optional<FileId> id;
};

[[noreturn]] void refuse(const Output& out, const std::string& clash) {
  throw UsageError(out.flag + " " + out.path + " " + clash +
                   ": xtrain would overwrite it; give the output a path of its own");
}

bool sameFile(const Output& out, const std::string& other) {
  if (out.id && out.id == fileId(other)) return true;
  return out.lands == landingPath(other);
}

// The checkpoint a run resumes from: nothing in it, nor a hard link to a file of it, is an output.
void checkResumed(const Output& out, const std::string& resume) {
  const fs::path root = landingPath(resume);
  const auto rel = below(out.lands, root);
  if (rel && *rel == ".") refuse(out, "is the same file as --resume " + resume);
  if (rel) refuse(out, "lies inside --resume " + resume + ", the checkpoint this run resumes from");
  if (!out.id) return;
  if (const auto link = hardLinkUnder(root, *out.id, [](const std::string&) { return true; })) {
    refuse(out, "is a hard link to '" + link->string() + "' of --resume " + resume +
                    ", the checkpoint this run resumes from");
  }
}

// The directory checkpoints are written into (and, with --resume auto, resumed from): its
// checkpoints, `latest` and the lock are xtrain's; other files there are the user's.
void checkCheckpointDirectory(const Output& out, const std::string& dir) {
  const fs::path root = landingPath(dir);
  const auto reserved = &checkpoint::layout::isReservedName;
  if (const auto rel = below(out.lands, root)) {
    if (*rel == ".") refuse(out, "is the same file as --checkpoint-dir " + dir);
    const std::string name = rel->begin()->string();
    if (reserved(name)) {
      refuse(out, "lies inside --checkpoint-dir " + dir + " under '" + name +
                      "', a name xtrain keeps there for its checkpoints (other names in the "
                      "directory are fine)");
    }
  }
  if (!out.id) return;
  if (const auto link = hardLinkUnder(root, *out.id, reserved)) {
    refuse(out, "is a hard link to '" + link->string() + "' of --checkpoint-dir " + dir);
  }
}

}  // namespace

void checkOutputsSpareInputs(const TrainOptions& o) {
  std::vector<Output> outputs;
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string*>{"--save-model", &o.saveModel},
        {"--trace", &o.trace},
        {"--metrics", &o.metrics}}) {
    if (path->empty()) continue;
    outputs.push_back({flag, *path, landingPath(*path), fileId(*path)});
  }
  const std::vector<std::pair<const char*, const std::string*>> files = {
      {"--model", &o.model}, {"--data", &o.data}, {"--val-data", &o.valData}};
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Output& out = outputs[i];
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (sameFile(out, outputs[j].path)) {
        refuse(out, "is the same file as " + outputs[j].flag + " " + outputs[j].path);
      }
    }
    for (const auto& [flag, path] : files) {
      if (!path->empty() && sameFile(out, *path)) {
        refuse(out, std::string("is the same file as ") + flag + " " + *path);
      }
    }
    if (!o.resume.empty() && o.resume != "auto") checkResumed(out, o.resume);
    if (!o.checkpointDir.empty()) checkCheckpointDirectory(out, o.checkpointDir);
  }
}

}  // namespace xtrain::tools
