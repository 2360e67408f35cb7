// xfuzz's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xfuzz {

struct Options {
  std::vector<std::string> targets;  // from --target (all = every target)
  uint64_t seed = 1;
  uint64_t cases = 100;               // per target
  std::optional<uint64_t> onlyCase;   // --case K
  std::string binDir;                 // "" = the directory of the xfuzz binary
  std::string scriptsDir;             // "" = the source tree's scripts/ (plot target)
  std::string pythonDir;              // "" = BINDIR/../python, the build's package (python target)
  std::string python = "/usr/bin/python3";
  double timeLimitSeconds = 0;        // 0 = none
  double timeoutSeconds = 10;         // per tool run
  long long memoryLimitMb = 4096;
  std::string workDir;                // "" = $TMPDIR or /tmp
  std::string keepDir = "xfuzz-failures";
  std::string savePristine;           // copy the pristine inputs here (seed corpora)
  bool verbose = false;
  bool help = false;
};

extern const char* const kUsage;

// Throws std::invalid_argument with a message for bad usage.
Options parseOptions(int argc, char** argv);

}  // namespace xfuzz
