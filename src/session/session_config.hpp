// SessionConfig: what a session is created from (the public create functions fill it in).
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <memory>
#include <string>

#include "xtrain/dataflow.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/patterns.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

struct SessionConfig {
  std::string model;  // ONNX path or bytes
  DataFlow dataFlow;
  std::shared_ptr<DeviceInfo> device;
  std::map<TensorId, TensorInfo> inputShapes;
  SessionOptions options;
  // Checked when the session is created (session/pattern_checks.hpp).
  Patterns patterns;
  // Training only:
  bool training = false;
  TensorId loss;
  std::unique_ptr<Optimizer> optimizer;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
