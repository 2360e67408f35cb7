#include "common/temporary_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace xtrain {

namespace {

constexpr size_t kMaxNameBytes = 96;
constexpr int kAttempts = 16;

uint64_t randomSeed() {
  uint64_t seed = 0;
  if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof seed)) {
    return seed;
  }
  // No entropy yet (early boot) or no getrandom: the clock and the process. Still not a fixed
  // name, and O_EXCL keeps a guessed one harmless.
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return static_cast<uint64_t>(now) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(::getpid());
}

// splitmix64: a few operations on integers, so drawName() is async-signal-safe.
uint64_t nextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

SiblingTemporary::SiblingTemporary(const std::string& target)
    : target_(target), state_(randomSeed()) {
  const size_t slash = target.rfind('/');
  const size_t nameAt = slash == std::string::npos ? 0 : slash + 1;
  const std::string name = target.substr(nameAt, kMaxNameBytes);
  path_ = target.substr(0, nameAt) + "." + name + ".tmp-";
  randomAt_ = path_.size();
  path_.append(16, '0');
  drawName();
}

SiblingTemporary::~SiblingTemporary() {
  discard();
}

void SiblingTemporary::drawName() noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t r = nextRandom(state_);
  for (size_t i = 0; i < 16; ++i, r >>= 4) path_[randomAt_ + i] = kHex[r & 0xF];
}

int SiblingTemporary::create(mode_t mode) noexcept {
  discard();
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) drawName();
    const int fd = ::open(path_.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
    if (fd >= 0) {
      created_ = true;
      return fd;
    }
    if (errno != EEXIST && errno != EINTR) return -1;
  }
  errno = EEXIST;
  return -1;
}

bool SiblingTemporary::publish() noexcept {
  if (!created_) {
    errno = ENOENT;
    return false;
  }
  if (::rename(path_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    errno = err;
    return false;
  }
  created_ = false;
  drawName();  // a later create() does not reuse a name that was seen in the directory
  return true;
}

void SiblingTemporary::discard() noexcept {
  if (!created_) return;
  const int err = errno;
  ::unlink(path_.c_str());
  created_ = false;
  drawName();
  errno = err;
}

}  // namespace xtrain
