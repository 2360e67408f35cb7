// File helpers of the harness: whole-file reads and writes, tree snapshots (to prove a tool left
// its inputs alone), scratch directories that remove themselves, and shell quoting of commands.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace xfuzz {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p);
void writeFile(const fs::path& p, const std::string& bytes);

// What one directory entry is, read with lstat (never following a symlink, never opening a FIFO or
// a device): type, and content hash (regular files), link target (symlinks) or device number.
struct EntryState {
  char type = '?';  // f regular, d dir, l symlink, p fifo, c char dev, b block dev, s socket
  uint64_t size = 0;
  uint64_t hash = 0;
  std::string linkTarget;
  uint64_t device = 0;
  bool operator==(const EntryState&) const = default;
  std::string describe() const;
};

// Every entry under root (recursively, relative paths; root itself as "."), skipping names that
// begin with ".xfuzz" (the harness's own logs). depth 0 = root's direct entries only, -1 = all.
using Snapshot = std::map<std::string, EntryState>;
Snapshot snapshot(const fs::path& root, int depth = -1);

// The differences of `after` from `before`: modified, removed and (when reportNew) new entries,
// one line each. Entries for which allowed(relpath) is true are not reported.
template <typename Allowed>
std::vector<std::string> compareSnapshots(const Snapshot& before, const Snapshot& after, bool reportNew,
                                          Allowed allowed) {
  std::vector<std::string> out;
  for (const auto& [path, state] : before) {
    if (allowed(path)) continue;
    auto it = after.find(path);
    if (it == after.end())
      out.push_back(path + ": removed (was " + state.describe() + ")");
    else if (!(it->second == state))
      out.push_back(path + ": changed from " + state.describe() + " to " + it->second.describe());
  }
  if (reportNew) {
    for (const auto& [path, state] : after)
      if (!before.count(path) && !allowed(path)) out.push_back(path + ": created (" + state.describe() + ")");
  }
  return out;
}

// A directory that is removed with everything in it when the object dies, unless released.
class ScratchDir {
 public:
  explicit ScratchDir(fs::path p);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }
  // Keeps the directory: moves it to `dest` (replacing what is there) and stops owning it.
  void keepAs(const fs::path& dest);

 private:
  fs::path path_;
  bool owned_ = true;
};

// A new unique directory under parent, named prefix-XXXXXX.
fs::path makeUniqueDir(const fs::path& parent, const std::string& prefix);

// Copies a tree, keeping symlinks as links and recreating FIFOs (the harness copies only what it
// made itself).
void copyTree(const fs::path& from, const fs::path& to);

// A command line as one shell line, each argument quoted when needed; long arguments are shown as
// "<N bytes of 'x'>" when abbreviate is set.
std::string shellLine(const std::vector<std::string>& argv, bool abbreviate = true);

// The last `lines` lines of a text file (for failure reports).
std::string tailOfFile(const fs::path& p, int lines);

}  // namespace xfuzz
