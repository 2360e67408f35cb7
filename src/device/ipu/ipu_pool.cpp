#include "device/ipu/ipu_pool.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/env_value.hpp"
#include "device/ipu/ipu_options.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device {
namespace {

// One id of an XTRAIN_IPU_IDS entry: decimal digits naming an IPU of the pool, else nullopt.
std::optional<int> ipuIdOf(std::string_view text, int poolSize) {
  int id = -1;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, id);
  const bool digitsOnly = !text.empty() && text.front() >= '0' && text.front() <= '9';
  if (!digitsOnly || ec != std::errc() || end != last || id >= poolSize) return std::nullopt;
  return id;
}

int openLockFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw error(
        "cannot open IPU lock file {}: {} (set XTRAIN_IPU_LOCK_DIR to a writable directory)", path,
        std::strerror(errno));
  }
  return fd;
}

// Non-blocking exclusive lock of the whole file; false when another open file holds it.
bool tryLockFd(int fd, const std::string& path) {
#ifdef F_OFD_SETLK
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  int rc;
  do {
    rc = ::fcntl(fd, F_OFD_SETLK, &fl);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    return true;
  }
  if (errno == EAGAIN || errno == EACCES) {
    return false;
  }
#else
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return true;
  if (errno == EWOULDBLOCK) return false;
#endif
  throw error("cannot lock IPU lock file {}: {}", path, std::strerror(errno));
}

// Whether another open file holds the lock on fd's file, without taking it (OFD locks can ask).
bool isLockedElsewhere(int fd, const std::string& path) {
#ifdef F_OFD_GETLK
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) {
    throw error("cannot query IPU lock file {}: {}", path, std::strerror(errno));
  }
  return fl.l_type != F_UNLCK;
#else
  if (!tryLockFd(fd, path)) return true;
  ::flock(fd, LOCK_UN);
  return false;
#endif
}

// The file's text as a holder's description, e.g. "process 1234" for a lock file holding "1234".
std::string readHolder(int fd, bool isPid) {
  char buf[256] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.pop_back();
  }
  if (text.empty()) return "another process";
  return isPid ? "process " + text : text;
}

}  // namespace

std::vector<int> PoolDevice::ipus() const {
  std::vector<int> out(static_cast<size_t>(numIpus));
  for (int i = 0; i < numIpus; ++i) {
    out[static_cast<size_t>(i)] = firstIpu + i;
  }
  return out;
}

int numPoolDeviceIds(int poolSize) {
  int n = 0;
  for (int size = 1; size <= poolSize; size *= 2) {
    n += poolSize / size;
  }
  return n;
}

std::vector<PoolDevice> poolDevices(int poolSize, int numIpus) {
  std::vector<PoolDevice> out;
  int base = 0;
  for (int size = 1; size <= poolSize; size *= 2) {
    const int count = poolSize / size;
    if (numIpus == 0 || numIpus == size) {
      for (int j = 0; j < count; ++j) {
        out.push_back(PoolDevice{base + j, size, j * size});
      }
    }
    base += count;
  }
  return out;
}

std::optional<PoolDevice> poolDeviceById(int poolSize, int id) {
  if (id < 0) {
    return std::nullopt;
  }
  int base = 0;
  for (int size = 1; size <= poolSize; size *= 2) {
    const int count = poolSize / size;
    if (id < base + count) {
      return PoolDevice{id, size, (id - base) * size};
    }
    base += count;
  }
  return std::nullopt;
}

std::vector<int> parseIpuIdList(std::string_view text, int poolSize, std::string_view what) {
  // Every refusal names the list, the entry at fault and what would do (`XTRAIN_IPU_IDS=-1` used to
  // be blamed on '', the empty text before its dash).
  const auto bad = [&](const std::string& why) {
    throwBadValue(what, text,
                  format("a comma-separated list of IPU ids and ranges A-B of the pool's IPUs "
                         "0..{} (XTRAIN_NUM_IPUS={}), e.g. 4,5 or 4-7; {}",
                         poolSize - 1, poolSize, why));
  };
  std::vector<std::pair<int, std::string_view>> ids;  // (id, the entry that named it)
  std::string_view rest = text;
  for (int index = 1;; ++index) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    if (entry.empty()) bad(format("entry {} is empty", index));
    const size_t dash = entry.find('-');
    const auto lo = ipuIdOf(entry.substr(0, dash), poolSize);
    const auto hi = dash == std::string_view::npos ? lo : ipuIdOf(entry.substr(dash + 1), poolSize);
    if (!lo || !hi) {
      bad(format("the entry '{}' is not {}", entry,
                 dash == std::string_view::npos ? "an IPU id of the pool"
                                                : "a range A-B of IPU ids of the pool"));
    }
    if (*hi < *lo) bad(format("the range '{}' ends before it starts", entry));
    for (int i = *lo; i <= *hi; ++i) ids.emplace_back(i, entry);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::stable_sort(ids.begin(), ids.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto dup = std::adjacent_find(
      ids.begin(), ids.end(), [](const auto& a, const auto& b) { return a.first == b.first; });
  if (dup != ids.end()) {
    bad(format("IPU {} is named twice (by the entries '{}' and '{}')", dup->first, dup->second,
               std::next(dup)->second));
  }
  std::vector<int> out;
  out.reserve(ids.size());
  for (const auto& [id, entry] : ids) out.push_back(id);
  return out;
}

PoolConfig readPoolConfig() {
  PoolConfig config;
  config.numIpus = static_cast<int>(
      readEnvWholeNumber("XTRAIN_NUM_IPUS", 1, kMaxPoolSize).value_or(kDefaultPoolSize));
  if (auto dir = readEnvString("XTRAIN_IPU_LOCK_DIR")) {
    config.lockDir = std::move(*dir);
    config.lockDirIsDefault = false;
  } else {
    config.lockDir = "/tmp/xtrain-ipus-" + std::to_string(::getuid());
  }
  if (auto ids = readEnvString("XTRAIN_IPU_IDS")) {
    config.allowedIpus = parseIpuIdList(*ids, config.numIpus, "XTRAIN_IPU_IDS");
    config.allowedText = std::move(*ids);
  }
  return config;
}

std::string lockFilePath(const std::string& dir, int ipu) {
  return dir + "/ipu" + std::to_string(ipu) + ".lock";
}

std::string reservationFilePath(const std::string& dir, int ipu) {
  return dir + "/ipu" + std::to_string(ipu) + ".reserved";
}

void ensureLockDir(const PoolConfig& config) {
  const std::string& dir = config.lockDir;
  if (config.lockDirIsDefault) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      throw error("cannot create the IPU lock directory {}: {} (set XTRAIN_IPU_LOCK_DIR)", dir,
                  std::strerror(errno));
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw error("the IPU lock directory {} is not a directory (set XTRAIN_IPU_LOCK_DIR)", dir);
    }
    if (st.st_uid != ::getuid()) {
      throw error(
          "the IPU lock directory {} belongs to uid {}, not to you (uid {}); set "
          "XTRAIN_IPU_LOCK_DIR to a directory of yours",
          dir, st.st_uid, ::getuid());
    }
    if ((st.st_mode & 022) != 0) {
      throw error(
          "the IPU lock directory {} has mode {:04o}: others may write into it; make it 0700 "
          "(chmod 700 {}) or set XTRAIN_IPU_LOCK_DIR",
          dir, static_cast<unsigned>(st.st_mode & 07777), dir);
    }
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec)) {
    throw error("cannot create the IPU lock directory {} (XTRAIN_IPU_LOCK_DIR): {}", dir,
                ec ? ec.message() : std::string("not a directory"));
  }
}

namespace {

// Locks the file at `path` without waiting and writes `note` into it; -1 when another holds it.
int lockAndNote(const std::string& path, const std::string& note) {
  const int fd = openLockFile(path);
  bool locked = false;
  try {
    locked = tryLockFd(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (!locked) {
    ::close(fd);
    return -1;
  }
  // Record the holder for other processes' error messages (best effort).
  const std::string text = note + "\n";
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
  }
  return fd;
}

// Who holds the lock of the file at `path`, or nullopt when nobody does.
std::optional<std::string> holderOf(const std::string& path, bool isPid) {
  const int fd = openLockFile(path);
  std::optional<std::string> holder;
  try {
    if (isLockedElsewhere(fd, path)) {
      holder = readHolder(fd, isPid);
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return holder;
}

}  // namespace

std::unique_ptr<IpuLock> IpuLock::tryAcquire(const std::string& dir, int ipu) {
  const int fd = lockAndNote(lockFilePath(dir, ipu), std::to_string(::getpid()));
  return fd < 0 ? nullptr : std::unique_ptr<IpuLock>(new IpuLock(fd));
}

std::unique_ptr<IpuLock> IpuLock::tryReserve(const std::string& dir, int ipu,
                                             const std::string& holder) {
  const int fd = lockAndNote(reservationFilePath(dir, ipu), holder);
  return fd < 0 ? nullptr : std::unique_ptr<IpuLock>(new IpuLock(fd));
}

IpuLock::~IpuLock() {
  // Clearing the holder before closing keeps a stale pid out of the next holder's messages. The
  // lock goes with the last descriptor of the open file.
  [[maybe_unused]] const int rc = ::ftruncate(fd_, 0);
  ::close(fd_);
}

std::optional<std::string> ipuHolder(const std::string& dir, int ipu) {
  return holderOf(lockFilePath(dir, ipu), true);
}

std::optional<std::string> ipuReserver(const std::string& dir, int ipu) {
  return holderOf(reservationFilePath(dir, ipu), false);
}

std::string describeHolders(const std::string& dir, const std::vector<int>& ipus, size_t maxItems) {
  std::string out;
  size_t held = 0;
  for (int ipu : ipus) {
    std::string what;
    if (auto holder = ipuHolder(dir, ipu)) {
      what = format("IPU {} is held by {}", ipu, *holder);
    } else if (auto reserver = ipuReserver(dir, ipu)) {
      what = format("IPU {} is reserved by {}", ipu, *reserver);
    } else {
      continue;
    }
    if (++held > maxItems) {
      continue;
    }
    if (!out.empty()) {
      out += "; ";
    }
    out += what;
  }
  if (held > maxItems) {
    out += format("; and {} more IPUs are held or reserved", held - maxItems);
  }
  return out;
}

}  // namespace xtrain::device
