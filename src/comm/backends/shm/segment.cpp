#include "comm/backends/shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "xtrain/error.hpp"

namespace xtrain::comm::shm {

namespace {

// Closes a descriptor on every path out of create()/open().
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

void* mapWhole(int fd, size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    throw runtime_error("shm: mmap of shared-memory segment {} ({} bytes) failed: {}", name, bytes,
                        std::strerror(errno));
  }
  return p;
}

}  // namespace

SharedSegment SharedSegment::create(const std::string& name, size_t bytes) {
  FdGuard fd{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
  if (fd.fd < 0) {
    throw runtime_error("shm: cannot create shared-memory segment {}: {}", name,
                        std::strerror(errno));
  }
  SharedSegment s;
  s.name_ = name;
  s.ownsName_ = true;  // from here on, failure unlinks the name
  if (::ftruncate(fd.fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    s.reset();
    throw runtime_error(
        "shm: cannot size shared-memory segment {} to {} bytes: {} (is /dev/shm full?)", name,
        bytes, std::strerror(err));
  }
  try {
    s.data_ = mapWhole(fd.fd, bytes, name);
  } catch (...) {
    s.reset();
    throw;
  }
  s.size_ = bytes;
  return s;
}

SharedSegment SharedSegment::open(const std::string& name) {
  FdGuard fd{::shm_open(name.c_str(), O_RDWR | O_NOFOLLOW, 0)};
  if (fd.fd < 0) {
    throw runtime_error("shm: cannot open shared-memory segment {}: {}", name,
                        std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) {
    throw runtime_error("shm: cannot stat shared-memory segment {}: {}", name,
                        std::strerror(errno));
  }
  // The job's segments are its own user's, mode 0600: one that is not was planted by someone else.
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw runtime_error(
        "shm: shared-memory segment {} belongs to uid {} with mode {:04o}; expected one of yours "
        "(uid {}) with mode 0600: another user created it, so the job refuses to use it",
        name, static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 07777),
        static_cast<unsigned>(::geteuid()));
  }
  SharedSegment s;
  s.name_ = name;
  s.size_ = static_cast<size_t>(st.st_size);
  s.data_ = mapWhole(fd.fd, s.size_, name);
  return s;
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      ownsName_(std::exchange(other.ownsName_, false)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    reset();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    ownsName_ = std::exchange(other.ownsName_, false);
  }
  return *this;
}

SharedSegment::~SharedSegment() {
  reset();
}

void SharedSegment::unlink() {
  if (ownsName_) {
    ::shm_unlink(name_.c_str());
    ownsName_ = false;
  }
}

void SharedSegment::reset() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  if (ownsName_) ::shm_unlink(name_.c_str());
  ownsName_ = false;
}

}  // namespace xtrain::comm::shm
