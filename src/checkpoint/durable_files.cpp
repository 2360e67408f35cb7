#include "checkpoint/durable_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint.hpp"
#include "common/file_descriptor.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

namespace {

std::string systemReason() {
  return std::strerror(errno);
}

}  // namespace

void fsyncPath(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw CheckpointError("cannot open '{}' to sync it: {}", path, systemReason());
  if (::fsync(fd.get()) != 0) throw CheckpointError("cannot sync '{}': {}", path, systemReason());
}

void fsyncDirectoryAndFiles(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) fsyncPath(entry.path().string());
  }
  if (ec) throw CheckpointError("cannot list '{}': {}", dir, ec.message());
  fsyncPath(dir);
}

void replaceFileDurably(const std::string& path, const std::string& content) {
  // The temporary name is this call's own: two jobs saving into one directory both replace
  // `latest`, and with one shared name one would rename the other's file away from under it. It
  // names this host and process, so prune() can remove the leftover of a writer that was killed.
  const std::string tmp = stagingDirectory(path, thisProcessAsStagingOwner());
  // Removes the temporary file this call created when writing, syncing or renaming it fails.
  struct RemoveUnlessRenamed {
    const std::string& file;
    bool created = false;
    ~RemoveUnlessRenamed() {
      if (created) ::unlink(file.c_str());
    }
  } cleanup{tmp};
  {
    // O_EXCL: a fresh file, never one (or a hard link) planted under the name beforehand.
    FileDescriptor fd(
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw CheckpointError("cannot create '{}': {}", tmp, systemReason());
    cleanup.created = true;
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw CheckpointError("cannot write '{}': {}", tmp, systemReason());
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) throw CheckpointError("cannot sync '{}': {}", tmp, systemReason());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw CheckpointError("cannot rename '{}' to '{}': {}", tmp, path, systemReason());
  }
  cleanup.created = false;  // it is `path` now
  fsyncPath(parentDirectory(path));
}

uint64_t bytesUnder(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code sizeEc;
    if (it->is_regular_file(sizeEc)) {
      const auto size = it->file_size(sizeEc);
      if (!sizeEc) total += size;
    }
  }
  return total;
}

std::string parentDirectory(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // "a/b/" -> "a/b"
  const fs::path parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string baseName(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace xtrain::checkpoint
