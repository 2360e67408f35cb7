// CheckpointDirectory's lock: one job writes checkpoints into a directory at a time
// (docs/checkpoint-format.md, "One job per directory"). A second job would otherwise commit and
// prune beside the first; refusing a directory that holds checkpoints cannot see two jobs started
// at the same instant into an empty one. flock(2) rather than a lock file's mere existence: the
// kernel releases it when the holder ends, however it ends, so a killed job leaves nothing stale.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "checkpoint/checkpoint_directory.hpp"
#include "checkpoint/layout.hpp"

namespace xtrain::checkpoint {

DirectoryInUse::DirectoryInUse(std::string lockFile, std::string holder)
    : CheckpointError("'{}' is held by process {}", lockFile, holder),
      lockFile_(std::move(lockFile)),
      holder_(std::move(holder)) {}

CheckpointDirectory::Lock::Lock(Lock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

CheckpointDirectory::Lock& CheckpointDirectory::Lock::operator=(Lock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

CheckpointDirectory::Lock::~Lock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

CheckpointDirectory::Lock CheckpointDirectory::lock() const {
  const std::string path = (std::filesystem::path(path_) / layout::kLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CheckpointError("cannot create its lock file '{}': {}", path, std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      // Not held by another job: the file system cannot lock (NFS without a lock manager gives
      // ENOLCK; some FUSE and Lustre mounts EOPNOTSUPP). Saying "in use" would send the user
      // looking for a job that does not exist.
      ::close(fd);
      throw CheckpointError(
          "cannot lock '{}': {} (the file system does not support file locks; use a directory "
          "on a file system that does)",
          path, std::strerror(err));
    }
    // The holder wrote its pid there when it took the lock.
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    throw DirectoryInUse(path, n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?");
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid only improves another job's message; the lock holds without it.
  }
  Lock lock;
  lock.fd_ = fd;
  return lock;
}

}  // namespace xtrain::checkpoint
