// Reading an ONNX model file as its bytes, bounded: at most protobuf's 2 GiB, and a FIFO nobody
// writes is waited for a few seconds, not forever. No protobuf here: the tools may include it.
#pragma once
#pragma GCC visibility push(default)

#include <string>

namespace xtrain::ir {

// The bytes of the model file at `path` (a regular file, a FIFO such as `<(...)`, a device).
// Throws xtrain::error naming the path when it cannot be opened or read, holds more than a
// ModelProto can, or is a FIFO that no process writes to within 5 s.
std::string readModelFile(const std::string& path);

}  // namespace xtrain::ir

#pragma GCC visibility pop
