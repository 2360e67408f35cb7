#include "common/timeline_job.hpp"

#include <unistd.h>

#include <filesystem>

#include "common/launch_environment.hpp"
#include "common/output_file.hpp"
#include "common/timeline.hpp"
#include "common/timeline_merge.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::timeline {

namespace {

// checkOutputPath, and no device or FIFO: the trace is renamed into place, which would replace one.
void checkTracePath(const std::string& path, const std::string& what) {
  checkOutputPath(path, what);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw error("{} '{}': not a regular file (the trace is written to a new file renamed over it)",
                what, path);
  }
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

}  // namespace

JobTrace::JobTrace(const JobTraceRequest& request) {
  const LaunchEnvironment env = readLaunchEnvironment();
  const bool launched = env.launcher != "none";
  Config config;
  config.instance = env.instanceIndex;
  config.processName =
      "instance " + std::to_string(env.instanceIndex) + " (host " + hostName() + ")";
  config.capacity = capacityFromEnvironment();
  config.steps = request.steps;
  steps_ = request.steps;
  what_ = request.what;
  file_ = launched ? partPath(request.path, env.instanceIndex) : request.path;
  checkTracePath(file_, request.what);
  if (launched && env.instanceIndex == 0 && env.rendezvousDir) {
    checkTracePath(request.path, request.what);
  }
  config.path = file_;
  start(config);
  try {
    if (launched && env.rendezvousDir)
      registerPart(*env.rendezvousDir, env.instanceIndex, request.path);
    if (request.writeOnInterrupt) writeOnInterrupt();
  } catch (...) {
    stop();
    throw;
  }
  logging::debug("trace: recording to {} (a ring of {} events{})", file_, config.capacity,
                 request.steps ? ", steps " + std::to_string(request.steps->first) + ".." +
                                     std::to_string(request.steps->second)
                               : std::string());
}

void JobTrace::finish() {
  if (finished_) return;
  finished_ = true;
  try {
    write();
  } catch (...) {
    stop();
    throw;
  }
  stop();
  if (steps_ && lastStep() < steps_->first) {
    logging::warn(
        "{} {}: the job ended at step {}, before steps {}..{} began: the trace holds no step",
        what_, file_, lastStep(), steps_->first, steps_->second);
  }
}

JobTrace::~JobTrace() {
  try {
    finish();
  } catch (const std::exception& e) {
    logging::err("{}", e.what());
  }
}

}  // namespace xtrain::timeline
