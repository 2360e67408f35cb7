#include "session/engine_options.hpp"

#include <string_view>
#include <vector>

#include "common/timeline.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {
namespace {

bool parseBool(const std::string& key, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  throw error("SessionOptions::engineOptions[\"{}\"] = \"{}\": expected \"true\" or \"false\"", key,
              value);
}

std::string joined(const std::vector<std::string_view>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

}  // namespace

EngineSettings parseEngineOptions(const std::map<std::string, std::string>& engineOptions) {
  static const std::vector<std::string_view> kKnown = {
      "autoReport.all", "autoReport.outputExecutionProfile", "autoReport.directory", "trace.file",
      "trace.steps"};
  EngineSettings s;
  for (const auto& [key, value] : engineOptions) {
    if (key == "autoReport.all" || key == "autoReport.outputExecutionProfile") {
      s.autoReport = s.autoReport || parseBool(key, value);
    } else if (key == "autoReport.directory") {
      s.autoReportDirectory = value;
    } else if (key == "trace.file") {
      s.traceFile = value;
    } else if (key == "trace.steps") {
      s.traceSteps =
          timeline::parseStepRange(value, "SessionOptions::engineOptions[\"trace.steps\"]");
    } else {
      throw error("SessionOptions::engineOptions: unknown key \"{}\"; the known keys are {}", key,
                  joined(kKnown));
    }
  }
  if (s.traceSteps && s.traceFile.empty()) {
    throw error(
        "SessionOptions::engineOptions[\"trace.steps\"] needs \"trace.file\" (the file to trace "
        "to)");
  }
  return s;
}

void checkReportOptions(const std::map<std::string, std::string>& reportOptions) {
  for (const auto& [key, value] : reportOptions) {
    throw error(
        "SessionOptions::reportOptions: unknown key \"{}\" (= \"{}\"); no keys are known yet", key,
        value);
  }
}

}  // namespace xtrain::session
