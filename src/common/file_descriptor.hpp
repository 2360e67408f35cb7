// FileDescriptor: owns a POSIX file descriptor and closes it on scope exit (RAII for open(2)).
#pragma once
#pragma GCC visibility push(default)

#include <unistd.h>

namespace xtrain {

class FileDescriptor {
 public:
  // Takes `fd` (as open(2) returned it; a negative value owns nothing).
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace xtrain

#pragma GCC visibility pop
