// An xtrain::error that also carries PopART's whole message for the fault.
//
// For a few faults PopART's programs compare the entire message, e.g. in Python
// `e.args[0] == "Axis -2 is out of acceptable range [-1, 0]"`. xtrain's own message (what()) names
// the op and the tensor and contains PopART's text; popartMessage() is PopART's text alone. The
// Python module makes args[0] PopART's text and str() xtrain's (docs/errors.md).
#pragma once

#include <string>
#include <utility>

#include "xtrain/api.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

class XTRAIN_API popart_worded_error : public error {
 public:
  popart_worded_error(std::string popartMessage, const std::string& what)
      : error(what), popartMessage_(std::move(popartMessage)) {}
  const std::string& popartMessage() const { return popartMessage_; }

 private:
  std::string popartMessage_;
};

}  // namespace xtrain
