// FileStore: one file per key in a job-private directory (POSIX).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "comm/store.hpp"

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
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw runtime_error("FileStore: {} is not a directory", dir_.string());
  }
  if (st.st_uid != ::getuid()) {
    throw runtime_error(
        "FileStore: {} belongs to another user (uid {}); choose another root or job id",
        dir_.string(), st.st_uid);
  }
}

std::filesystem::path FileStore::pathOf(const std::string& key) const {
  return dir_ / (escape(jobId()) + "." + escape(key));
}

std::optional<std::string> FileStore::read(const std::string& key) {
  std::ifstream in(pathOf(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void FileStore::write(const std::string& key, const std::string& value) {
  static std::atomic<uint64_t> counter{0};
  const auto target = pathOf(key);
  auto tmp = target;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    out.flush();
    if (!out) throw runtime_error("FileStore: cannot write {}", tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) throw runtime_error("FileStore: cannot rename {}: {}", tmp.string(), ec.message());
}

bool FileStore::has(const std::string& key) {
  return std::filesystem::exists(pathOf(key));
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
