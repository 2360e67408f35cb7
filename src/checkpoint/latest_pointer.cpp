// CheckpointDirectory's `latest`: reading it, deciding whether it is xtrain's to replace
// (docs/checkpoint-format.md, "Whose `latest` it is"), and replacing it.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "checkpoint/checkpoint_directory.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/seal.hpp"
#include "xtrain/format.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

// The first line, whole: a space is a legal byte of a checkpoint's name (checkLatestIsReplaceable
// accepts one), so the name is not read as a whitespace-separated word.
std::string CheckpointDirectory::latestName() const {
  std::ifstream in(fs::path(path_) / layout::kLatestFile);
  std::string name;
  if (!std::getline(in, name)) return "";
  return name;
}

void CheckpointDirectory::checkLatestIsReplaceable() const {
  const std::string file = (fs::path(path_) / layout::kLatestFile).string();
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
        file, why, path_);
  };
  if (S_ISLNK(st.st_mode)) refuse("it is a symbolic link");
  if (!S_ISREG(st.st_mode)) refuse("it is not a regular file");
  // One name of at most 255 bytes and its newline, as pointLatestAt() writes it.
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
  if (layout::checkpointStep(name) || isSealed((fs::path(path_) / name).string())) return;
  refuse(format("it names '{}', which is neither ckpt-<step> nor a checkpoint xtrain wrote there",
                name));
}

void CheckpointDirectory::pointLatestAt(const std::string& name) const {
  replaceFileDurably((fs::path(path_) / layout::kLatestFile).string(), name + "\n");
}

}  // namespace xtrain::checkpoint
