#include "common/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/file_descriptor.hpp"
#include "common/temporary_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

namespace fs = std::filesystem;

namespace {

std::string reason(int err) {
  return std::strerror(err);
}

// The path a write to `path` lands on: symbolic links followed (relative targets taken from the
// link's directory), at most 40 of them as the kernel allows. The result may not exist yet.
std::string followLinks(const std::string& path, std::string_view what) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const fs::file_status s = fs::symlink_status(p, ec);
    if (ec || !fs::is_symlink(s)) return p.string();
    const fs::path target = fs::read_symlink(p, ec);
    if (ec)
      throw error("{}: cannot read the symbolic link '{}': {}", what, p.string(), ec.message());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  throw error("{}: '{}' is a chain of more than 40 symbolic links (a loop?)", what, path);
}

enum class Kind { Missing, Regular, WriteThrough };

Kind kindOf(const std::string& path, std::string_view what, struct stat& st) {
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Kind::Missing;
    throw error("{}: cannot examine '{}': {}", what, path, reason(errno));
  }
  if (S_ISREG(st.st_mode)) return Kind::Regular;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return Kind::WriteThrough;
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw error("{}: cannot write '{}': it is {}, expected a file path", what, path, kind);
}

std::string directoryOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

void checkDirectoryWritable(const std::string& file, std::string_view what) {
  const std::string dir = directoryOf(file);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw error("{}: cannot write '{}': its directory '{}' does not exist ({})", what, file, dir,
                reason(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw error("{}: cannot write '{}': '{}' is not a directory", what, file, dir);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw error("{}: cannot write '{}': the directory '{}' is not writable ({})", what, file, dir,
                reason(errno));
  }
}

void writeAll(int fd, std::string_view bytes, const std::string& path, std::string_view what) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw error("{}: writing {} bytes to '{}' failed after {}: {}", what, bytes.size(), path,
                  done, reason(errno));
    }
    done += static_cast<size_t>(n);
  }
}

// A character device or FIFO: opened without O_CREAT or O_TRUNC, so it is never replaced.
void writeThrough(const std::string& path, std::string_view bytes, std::string_view what) {
  // O_NONBLOCK makes opening a FIFO that nobody reads fail (ENXIO) instead of blocking forever.
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENXIO) {
      throw error("{}: cannot write '{}': it is a FIFO that no process is reading", what, path);
    }
    throw error("{}: cannot open '{}' for writing: {}", what, path, reason(errno));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  writeAll(fd.get(), bytes, path, what);
}

// Writes `bytes` to a fresh temporary beside `target` (SiblingTemporary: never through something
// planted under its name), fsyncs it and renames it over `target`; `mode` (an existing file's
// permission bits) is given to the new file.
void replaceRegular(const std::string& target, std::string_view bytes, std::string_view what,
                    const struct stat* existing) {
  checkDirectoryWritable(target, what);
  SiblingTemporary tmp(target);
  {
    FileDescriptor fd(tmp.create());
    if (fd.get() < 0) {
      throw error("{}: cannot write '{}': cannot create '{}': {}", what, target, tmp.path(),
                  reason(errno));
    }
    writeAll(fd.get(), bytes, tmp.path(), what);
    if (existing != nullptr) ::fchmod(fd.get(), existing->st_mode & 07777);
    if (::fsync(fd.get()) != 0) {
      throw error("{}: cannot write '{}': fsync failed: {}", what, tmp.path(), reason(errno));
    }
  }
  const std::string tmpPath = tmp.path();
  if (!tmp.publish()) {
    throw error("{}: cannot write '{}': renaming '{}' into place failed: {}", what, target, tmpPath,
                reason(errno));
  }
  // The rename is durable once the directory is synced; a failure here loses nothing written.
  FileDescriptor dir(::open(directoryOf(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
}

void requireName(const std::string& path, std::string_view what) {
  if (path.empty()) throw error("{} needs a file path, got an empty one", what);
}

}  // namespace

void checkOutputPath(const std::string& path, std::string_view what) {
  requireName(path, what);
  const std::string target = followLinks(path, what);
  struct stat st {};
  switch (kindOf(target, what, st)) {
    case Kind::Missing:
    case Kind::Regular: checkDirectoryWritable(target, what); break;
    case Kind::WriteThrough: break;
  }
}

void writeOutputFile(const std::string& path, std::string_view bytes, std::string_view what) {
  requireName(path, what);
  const std::string target = followLinks(path, what);
  struct stat st {};
  switch (kindOf(target, what, st)) {
    case Kind::Missing: replaceRegular(target, bytes, what, nullptr); break;
    case Kind::Regular: replaceRegular(target, bytes, what, &st); break;
    case Kind::WriteThrough: writeThrough(target, bytes, what); break;
  }
}

void replaceOwnFile(const std::string& path, std::string_view bytes, std::string_view what) {
  requireName(path, what);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      throw error("{}: cannot write '{}': it is a directory, expected a file path", what, path);
    }
    if (S_ISREG(st.st_mode)) {
      replaceRegular(path, bytes, what, &st);
      return;
    }
  } else if (errno != ENOENT) {
    throw error("{}: cannot write '{}': {}", what, path, reason(errno));
  }
  replaceRegular(path, bytes, what, nullptr);
}

}  // namespace xtrain
