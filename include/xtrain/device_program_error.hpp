// xtrain::device_program_error: the simulated device cannot build the program for a model it
// accepted, because a kernel has no form for the op's element type (an 8-bit Add, say).
#pragma once

#include <string>
#include <string_view>

#include "xtrain/api.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

// Raised by prepareDevice. PopART accepts such a model too and fails when Poplar compiles it (its
// PopLibs have no such codelet), with a poplar_exception: Python raises this class as
// poplar_exception, with xtrain's message naming the op and the types its kernel takes.
class XTRAIN_API device_program_error : public error {
 public:
  explicit device_program_error(const std::string& what) : error(what) {}
  template <typename... Args>
  explicit device_program_error(std::string_view f, const Args&... args) : error(f, args...) {}
};

}  // namespace xtrain
