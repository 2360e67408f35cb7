#include "ir/onnx/model_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "common/file_descriptor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::ir {

namespace {

// protobuf parses messages of at most 2 GiB - 1 bytes; a larger "model" cannot be read, and a
// file without an end (/dev/zero, an endless pipe) would otherwise be read until memory runs out.
constexpr size_t kMaxModelBytes = static_cast<size_t>(std::numeric_limits<int>::max());

// How long a FIFO given as the model may stay silent: process substitution (`<(...)`) writes at
// once, while a FIFO nobody writes would otherwise block the reader forever.
constexpr int kFifoWaitMilliseconds = 5000;

}  // namespace

// Opened without blocking, so a FIFO with no writer is waited for a bounded time, not forever.
std::string readModelFile(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    throw error("cannot load ONNX model: cannot open file '{}' for reading ({})", path,
                std::strerror(errno));
  }
  struct stat st {};
  // A device has no model in it: /dev/zero would be read for its whole 2 GiB before failing to
  // parse, /dev/null read as an empty model. Refused at once.
  if (::fstat(fd.get(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
    throw error(
        "cannot load ONNX model: '{}' is a {} device, not a model file (give a file, a FIFO or "
        "process substitution)",
        path, S_ISCHR(st.st_mode) ? "character" : "block");
  }
  if (S_ISFIFO(st.st_mode)) {
    pollfd wait{fd.get(), POLLIN, 0};
    if (::poll(&wait, 1, kFifoWaitMilliseconds) <= 0) {
      throw error("cannot load ONNX model: '{}' is a FIFO that no process wrote to within {} s",
                  path, kFifoWaitMilliseconds / 1000);
    }
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  std::string bytes;
  std::vector<char> chunk(size_t{1} << 20);
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      throw error("cannot load ONNX model: reading file '{}' failed ({})", path,
                  std::strerror(errno));
    }
    if (got == 0) return bytes;
    if (bytes.size() + static_cast<size_t>(got) > kMaxModelBytes) {
      throw error(
          "cannot load ONNX model: '{}' is larger than {} bytes, the most a protobuf ModelProto "
          "can hold (is it a model file?)",
          path, kMaxModelBytes);
    }
    bytes.append(chunk.data(), static_cast<size_t>(got));
  }
}

}  // namespace xtrain::ir
