#include "session/engine_options.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/timeline.hpp"
#include "session/option_strings.hpp"
#include "xtrain/engine_option_error.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {
namespace {

bool parseBool(const std::string& key, const std::string& value,
               const char* member = "engineOptions") {
  if (value == "true") return true;
  if (value == "false") return false;
  throw error("SessionOptions::{}[\"{}\"] = \"{}\": expected \"true\" or \"false\"", member, key,
              value);
}

// A key accepted with no effect whose value must still be one of Poplar's words, so that a typo
// in it is an error: `expected "a", "b" or "c"`.
void requireOneOf(const std::string& key, const std::string& value,
                  const std::vector<std::string_view>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string words;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i > 0) words += i + 1 == allowed.size() ? " or " : ", ";
    words += '"';
    words += allowed[i];
    words += '"';
  }
  throw error("SessionOptions::engineOptions[\"{}\"] = \"{}\": expected {}", key, value, words);
}

// Poplar's autoReport options that have no counterpart here: refused by name rather than as
// unknown, so that a ported program learns why.
bool isUnsupportedAutoReportKey(const std::string& key) {
  static const std::vector<std::string_view> kUnsupported = {
      "autoReport.outputArchive", "autoReport.outputLoweredVars", "autoReport.outputDebugInfo",
      "autoReport.executionProfileProgramRunCount", "autoReport.streamAtEachRun"};
  return std::find(kUnsupported.begin(), kUnsupported.end(), key) != kUnsupported.end();
}

// Poplar's options that tune how Poplar compiles or instruments a program and cannot change what it
// computes: accepted with no effect, each for the reason given (docs/session-options.md).
bool isAcceptedPoplarKey(const std::string& key) {
  static const std::vector<std::string_view> kNoEffect = {
      "debug.retainDebugInformation",  // op names and debug contexts are always kept
      "opt.enableInlining",            // there is no Poplar code to inline or to outline
      "debug.instrument",              // the cycle model instruments every program
      "debug.instrumentCompute",
      "debug.instrumentExternalExchange",
      "debug.instrumentControlFlow"};
  return std::find(kNoEffect.begin(), kNoEffect.end(), key) != kNoEffect.end();
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
  // Also known: isAcceptedPoplarKey's, target.deterministicWorkers (every kernel is
  // deterministic already) and exchange.streamBufferOverlap, accepted with no effect.
  static const std::vector<std::string_view> kKnown = {"autoReport.all",
                                                       "autoReport.outputExecutionProfile",
                                                       "autoReport.outputGraphProfile",
                                                       "autoReport.outputSerializedGraph",
                                                       "autoReport.directory",
                                                       "trace.file",
                                                       "trace.steps",
                                                       "debug.allowOutOfMemory"};
  refuseNulBytes(engineOptions, "engineOptions");  // a path cut at a NUL would be another file
  EngineSettings s;
  for (const auto& [key, value] : engineOptions) {
    if (key == "autoReport.all") {
      const bool on = parseBool(key, value);
      s.autoReport = s.autoReport || on;
      s.autoReportSerializedGraph = s.autoReportSerializedGraph || on;
    } else if (key == "autoReport.outputExecutionProfile" ||
               key == "autoReport.outputGraphProfile") {
      s.autoReport = s.autoReport || parseBool(key, value);
    } else if (key == "autoReport.outputSerializedGraph") {
      s.autoReportSerializedGraph = s.autoReportSerializedGraph || parseBool(key, value);
    } else if (key == "autoReport.directory") {
      if (value.empty()) {
        throw error(
            "SessionOptions::engineOptions[\"autoReport.directory\"] is empty: expected a "
            "directory path");
      }
      s.autoReportDirectory = value;
    } else if (isUnsupportedAutoReportKey(key)) {
      throw error(
          "SessionOptions::engineOptions[\"{}\"] is a Poplar option xtrain does not support (no "
          "archive, lowered variables, debug information or streamed profiles are written); the "
          "autoReport keys xtrain knows are autoReport.all, autoReport.outputExecutionProfile, "
          "autoReport.outputGraphProfile, autoReport.outputSerializedGraph and "
          "autoReport.directory",
          key);
    } else if (key == "debug.allowOutOfMemory") {
      s.allowOutOfMemory = parseBool(key, value);
    } else if (key == "target.deterministicWorkers") {
      requireOneOf(key, value, {"true", "false", "portable"});
    } else if (isAcceptedPoplarKey(key)) {
      parseBool(key, value);  // accepted with no effect, but a typo in the value is still an error
    } else if (key == "trace.file") {
      if (value.empty()) {
        throw error(
            "SessionOptions::engineOptions[\"trace.file\"] is empty: expected the path of the "
            "trace file to write (leave the key out for no trace)");
      }
      s.traceFile = value;
    } else if (key == "trace.steps") {
      s.traceSteps =
          timeline::parseStepRange(value, "SessionOptions::engineOptions[\"trace.steps\"]");
    } else if (key == "exchange.streamBufferOverlap") {
      // Poplar's values: whether the host stream buffers may share memory with other variables
      // (a Poplar memory saving); the simulated device's stream buffers are host memory.
      requireOneOf(key, value, {"none", "hostRearrangeOnly", "any"});
    } else {
      // Poplar's words end the Python exception's args[0] (a poplar_exception, as PopART raises).
      throw engine_option_error(
          key,
          xtrain::format("SessionOptions::engineOptions: unknown key \"{}\"; the known keys are {} "
                         "(and Poplar's debug.retainDebugInformation, opt.enableInlining, "
                         "target.deterministicWorkers, exchange.streamBufferOverlap and "
                         "debug.instrument*, accepted with no effect)",
                         key, joined(kKnown)));
    }
  }
  if (s.traceSteps && s.traceFile.empty()) {
    throw error(
        "SessionOptions::engineOptions[\"trace.steps\"] needs \"trace.file\" (the file to trace "
        "to)");
  }
  return s;
}

ReportSettings parseReportOptions(const std::map<std::string, std::string>& reportOptions) {
  refuseNulBytes(reportOptions, "reportOptions");
  ReportSettings r;
  for (const auto& [key, value] : reportOptions) {
    if (key == "showExecutionSteps") {
      r.showExecutionSteps = parseBool(key, value, "reportOptions");
    } else if (key == "showVarStorage") {
      r.showVarStorage = parseBool(key, value, "reportOptions");
    } else {
      throw error(
          "SessionOptions::reportOptions: unknown key \"{}\" (= \"{}\"); the known keys are "
          "showExecutionSteps, showVarStorage",
          key, value);
    }
  }
  return r;
}

void prepareAutoReportDirectory(const EngineSettings& settings) {
  if (!settings.autoReport && !settings.autoReportSerializedGraph) return;
  const std::string dir = settings.autoReportDirectory.empty() ? "." : settings.autoReportDirectory;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw error(
        "SessionOptions::engineOptions[\"autoReport.directory\"] = \"{}\": cannot create the "
        "directory: {}",
        dir, ec.message());
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    throw error("SessionOptions::engineOptions[\"autoReport.directory\"] = \"{}\": not a directory",
                dir);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw error(
        "SessionOptions::engineOptions[\"autoReport.directory\"] = \"{}\": the directory cannot "
        "be written",
        dir);
  }
}

}  // namespace xtrain::session
