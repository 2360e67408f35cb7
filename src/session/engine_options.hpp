// SessionOptions::engineOptions and reportOptions, parsed and checked once at session creation.
// The keys keep Poplar's names where Poplar has the option ("autoReport.*"); xtrain's own keys
// ("trace.*") are documented in docs/session-options.md. An unknown key or a bad value throws
// xtrain::error naming the key, the value and what is expected, before anything is compiled.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace xtrain::session {

struct EngineSettings {
  // autoReport.all / autoReport.outputExecutionProfile: write the report at the end of each run().
  bool autoReport = false;
  // autoReport.directory: where the report goes ("." when autoReport is on and this is empty).
  std::string autoReportDirectory;
  // trace.file: a Chrome-trace JSON file this process writes its timeline to when the session is
  // destroyed (docs/trace.md); empty: no trace.
  std::string traceFile;
  // trace.steps "A:B": only runs A..B (1-based, inclusive) are traced; unset: every run (the
  // trace keeps a bounded ring). Needs trace.file.
  std::optional<std::pair<int64_t, int64_t>> traceSteps;
};

EngineSettings parseEngineOptions(const std::map<std::string, std::string>& engineOptions);

// Checks reportOptions' keys and values (throws as above).
void checkReportOptions(const std::map<std::string, std::string>& reportOptions);

}  // namespace xtrain::session
