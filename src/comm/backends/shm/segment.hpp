// SharedSegment: an RAII mapping of a POSIX shared-memory object (shm_open + mmap).
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <string>

namespace xtrain::comm::shm {

// Contract: create() makes a new object (fails if the name exists) of `bytes` zero-filled bytes,
// mode 0600; open() maps an existing one whole, refusing one that is not this user's or not 0600
// (planted by another user). The mapping lives until destruction. unlink()
// removes the name (mapped memory stays valid for everyone who mapped it); the creator's
// destructor unlinks too if nobody did, so a failed set-up leaves nothing in /dev/shm.
class SharedSegment {
 public:
  static SharedSegment create(const std::string& name, size_t bytes);
  static SharedSegment open(const std::string& name);

  SharedSegment() = default;
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  void unlink();

 private:
  void reset() noexcept;

  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool ownsName_ = false;
};

}  // namespace xtrain::comm::shm

#pragma GCC visibility pop
