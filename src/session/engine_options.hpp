// SessionOptions::engineOptions and reportOptions, parsed and checked once at session creation.
// The keys keep Poplar's names where Poplar has the option ("autoReport.*", documented with
// reportOptions' keys in docs/reports.md); xtrain's own keys ("trace.*") are documented in
// docs/session-options.md. An unknown key or a bad value throws
// xtrain::error naming the key, the value and what is expected, before anything is compiled.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#pragma GCC visibility push(default)

namespace xtrain::session {

struct EngineSettings {
  // autoReport.all, autoReport.outputExecutionProfile or autoReport.outputGraphProfile: write the
  // reports (report.json, summary.txt) at the end of each run() (docs/reports.md).
  bool autoReport = false;
  // autoReport.all or autoReport.outputSerializedGraph: also write serialized_graph.json.
  bool autoReportSerializedGraph = false;
  // autoReport.directory: where the reports go ("." when autoReport is on and this is empty).
  std::string autoReportDirectory;
  // trace.file: a Chrome-trace JSON file this process writes its timeline to when the session is
  // destroyed (docs/trace.md); empty: no trace.
  std::string traceFile;
  // trace.steps "A:B": only runs A..B (1-based, inclusive) are traced; unset: every run (the
  // trace keeps a bounded ring). Needs trace.file.
  std::optional<std::pair<int64_t, int64_t>> traceSteps;
  // debug.allowOutOfMemory: a device whose IPUs overflow their memory is prepared and runs anyway
  // (as Poplar compiles it; the summary report still shows the overflow) instead of
  // OutOfMemoryException.
  bool allowOutOfMemory = false;
};

EngineSettings parseEngineOptions(const std::map<std::string, std::string>& engineOptions);

// SessionOptions::reportOptions: what the text report (getSummaryReport) shows besides its
// defaults (Poplar's report option names).
struct ReportSettings {
  // showExecutionSteps: every instruction of the programs, not only the slowest 20.
  bool showExecutionSteps = false;
  // showVarStorage: every tensor on each IPU, not only the 5 largest.
  bool showVarStorage = false;
};

// Parses reportOptions (throws as above).
ReportSettings parseReportOptions(const std::map<std::string, std::string>& reportOptions);

// Creates the autoReport directory when autoReport is on (a missing one is made) and checks that
// it can be written: throws xtrain::error naming it otherwise, before anything is compiled.
void prepareAutoReportDirectory(const EngineSettings& settings);

}  // namespace xtrain::session

#pragma GCC visibility pop
