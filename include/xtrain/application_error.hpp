// xtrain::application_runtime_error: the program running on the device stopped itself.
#pragma once

#include "xtrain/api.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

// The program running on the device stopped itself: the model's Abort op ran (unconditionally, or
// with a true condition). Not a fault of the device or the environment: running again stops
// again unless the model or its data change. PopART raises Poplar's
// poplar_application_runtime_error here.
class XTRAIN_API application_runtime_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

}  // namespace xtrain
