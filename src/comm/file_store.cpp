// FileStore: one file per key in a job-private directory (POSIX).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comm/store.hpp"
#include "common/temporary_file.hpp"

namespace xtrain::comm {

namespace {

bool safeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// Keys become file names: safe characters stay, others become %XX.
std::string escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    if (safeChar(c)) {
      out += c;
    } else {
      const auto u = static_cast<unsigned char>(c);
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

// RAII: an exclusive flock() on a file, released (and closed) on destruction.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0)
      throw runtime_error("cannot open lock file {}: {}", path.string(), std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int e = errno;
        ::close(fd_);
        throw runtime_error("cannot lock {}: {}", path.string(), std::strerror(e));
      }
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

FileStore::FileStore(const std::filesystem::path& root, std::string jobId,
                     std::optional<Milliseconds> timeout)
    : LocalStore(std::move(jobId), timeout) {
  if (LocalStore::jobId().empty()) throw error("FileStore needs a non-empty job id");
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) throw runtime_error("FileStore: cannot create {}: {}", root.string(), ec.message());
  dir_ = root / ("xtrain-job-" + escape(LocalStore::jobId()));
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    throw runtime_error("FileStore: cannot create {}: {}", dir_.string(), std::strerror(errno));
  }
  // lstat: a symbolic link planted under this name (in a shared /tmp) is refused, not followed.
  struct stat st {};
  if (::lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw runtime_error("FileStore: {} is not a directory (a symbolic link is refused)",
                        dir_.string());
  }
  if (st.st_uid != ::geteuid()) {
    throw runtime_error(
        "FileStore: {} belongs to another user (uid {}); choose another root or job id",
        dir_.string(), st.st_uid);
  }
  if ((st.st_mode & 077) != 0) {
    throw runtime_error(
        "FileStore: {} has mode {:04o}, open to other users; the store's directory must be "
        "private to you (mode 0700): remove it or choose another root",
        dir_.string(), static_cast<unsigned>(st.st_mode & 07777));
  }
}

std::filesystem::path FileStore::pathOf(const std::string& key) const {
  return dir_ / (escape(jobId()) + "." + escape(key));
}

std::optional<std::string> FileStore::read(const std::string& key) {
  // O_NOFOLLOW: a key is a file this job wrote, never a link to somewhere else.
  const int fd = ::open(pathOf(key).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string value;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw runtime_error("FileStore: cannot read {}: {}", pathOf(key).string(), std::strerror(e));
    }
    if (n == 0) break;
    value.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return value;
}

void FileStore::write(const std::string& key, const std::string& value) {
  const auto target = pathOf(key);
  // A fresh file of this process only, under a name nobody can foresee (SiblingTemporary: O_EXCL,
  // never through a planted link), mode 0600.
  SiblingTemporary tmp(target.string());
  {
    const int fd = tmp.create(0600);
    if (fd < 0) {
      throw runtime_error("FileStore: cannot create {}: {}", tmp.path(), std::strerror(errno));
    }
    size_t done = 0;
    while (done < value.size()) {
      const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        ::close(fd);
        throw runtime_error("FileStore: cannot write {}: {}", tmp.path(), std::strerror(e));
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  const std::string tmpPath = tmp.path();
  if (!tmp.publish()) {
    throw runtime_error("FileStore: cannot rename {}: {}", tmpPath, std::strerror(errno));
  }
}

bool FileStore::has(const std::string& key) {
  struct stat st {};
  return ::lstat(pathOf(key).c_str(), &st) == 0;
}

void FileStore::update(const std::string& key,
                       const std::function<std::string(const std::optional<std::string>&)>& next) {
  FileLock lock(dir_ / ".lock");
  write(key, next(read(key)));
}

std::string FileStore::label() const {
  return format("file store {} of job '{}'", dir_.string(), jobId());
}

}  // namespace xtrain::comm
