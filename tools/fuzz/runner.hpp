// Running the tools of a case and judging the outcome.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "process.hpp"
#include "targets.hpp"

namespace xfuzz {

// Where the tools are and how each run of one is bounded.
struct ToolRunner {
  fs::path binDir;
  fs::path scriptsDir;    // scripts/plot-trace and scripts/plot-metrics (the plot target)
  fs::path pythonDir;     // holds the built `xtrain` package (PYTHONPATH of every run)
  fs::path mplConfigDir;  // matplotlib's font cache, shared by the cases of a run (made once)
  std::chrono::milliseconds timeout{10000};
  long long addressSpaceMb = 4096;

  // Resolves args[0] (a tool name or a path such as /usr/bin/h5import) in binDir. A tool that is
  // missing (being rebuilt by someone) is waited for until the deadline or a stop request.
  using Clock = std::chrono::steady_clock;
  std::string resolve(const std::string& tool, Clock::time_point deadline) const;
  // Where args[0] is, for messages: a path as it is, plot-* in scriptsDir, any other in binDir.
  fs::path location(const std::string& tool) const;
  // Runs args in workDir with env on top of the harness's variables; stdout+stderr to logPath;
  // TMPDIR points into workDir so nothing lands in the system's /tmp.
  RunResult run(const std::vector<std::string>& args, const fs::path& workDir, const fs::path& logPath,
                const std::map<std::string, std::string>& env = {},
                std::chrono::milliseconds timeoutAtLeast = std::chrono::milliseconds(0)) const;
};

// A command as one shell line to reproduce it: its variables, the tool's location, its arguments.
std::string reproduceLine(const ToolRunner& tools, const Command& cmd);

struct RunConfig {
  std::string target;
  uint64_t seed = 1;
  fs::path workRoot;  // holds pristine/ and one directory per case
  fs::path keepDir;   // failing cases are moved here
  bool verbose = false;
};

// Runs case `caseNumber` of the target: builds its directory, runs its commands, checks each one.
// On failure prints the report and keeps the directory; returns whether the case passed.
bool runCase(const ToolRunner& tools, const RunConfig& cfg, const Pristine& pristine, uint64_t caseNumber);

}  // namespace xfuzz
