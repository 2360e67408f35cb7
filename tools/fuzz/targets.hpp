// The fuzz targets: each turns (pristine inputs, case directory, case Rng) into a Case, the files
// it puts in the case directory plus the commands that run the tools on them.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "files.hpp"
#include "rng.hpp"

namespace xfuzz {

// The inputs every case starts from, made once per run by makePristine (pristine.hpp).
struct Pristine {
  fs::path dir;            // model.onnx, data.h5, ckpts/ (ckpt-00000001, ckpt-00000002, latest),
                           // trace.json and metrics.jsonl (of a 3-step xtrain run)
  fs::path binDir;         // the tools (for a command that names one as an argument: xrun's program)
  std::string loss;        // the loss tensor of model.onnx
  std::string microBatch;  // the micro-batch size model.onnx was saved with
  bool deviceNodes = false;  // whether char device nodes can be made in a scratch dir (mknod)
  bool hasXbench = false;    // xbench is built (not in the sanitizer presets): cli cases may use it
  std::string python;        // the interpreter of the python target (Debian's /usr/bin/python3)
};

// The last line of every python case's program: the interpreter got to its end.
inline constexpr const char* kPythonDone = "xfuzz-python: done";
// The program of the python target that makes one API call with one argument (Python expressions).
std::string pythonProgram(const std::string& call, const std::string& value);

// One tool invocation of a case. Paths in args are relative to the case directory (the child's
// working directory), so a kept failure directory reproduces with `cd DIR && <command>`.
struct Command {
  Command() = default;
  Command(std::vector<std::string> a, std::vector<std::string> m = {}) : args(std::move(a)), mayChange(std::move(m)) {}

  std::vector<std::string> args;  // args[0]: the tool's name (xtrain, xckpt, xbench, xrun, plot-*) or a path
  // Entries of the case directory (relative paths, prefix match) the command may change or remove,
  // e.g. the `latest` pointer a resumed run moves. Everything else that existed must stay as it was.
  std::vector<std::string> mayChange;
  // Set for this run on top of the harness's environment (the env target's variable).
  std::map<std::string, std::string> env;
  // How the run may end: these exit codes (no signal, no timeout).
  std::vector<int> allowedExits{0, 1, 2};
  // Text that must not appear in its output (a Python traceback; "timed out after -").
  std::vector<std::string> forbiddenOutput;
  // Text that must appear in its output ("" = none): the python target's program ran to its end.
  std::string requiredOutput;
  // Every "timed out after N ms" (or "N s") in its output must be a time the run lasted: a time-out
  // computed from an overflowed value expires at once, whatever number it prints.
  bool checkTimeouts = false;
  // The run's time limit is at least this (and --timeout): a Python start (numpy, matplotlib, the
  // package) takes seconds on a busy machine, and xrun starts two instances.
  std::chrono::milliseconds timeoutAtLeast{0};
};

struct Case {
  std::string mutation;  // what was done to which input ("" when nothing was mutated)
  std::vector<Command> commands;
};

using CaseMaker = Case (*)(const Pristine&, const fs::path& caseDir, Rng&);

Case makeModelCase(const Pristine&, const fs::path& caseDir, Rng&);
Case makeDataCase(const Pristine&, const fs::path& caseDir, Rng&);
Case makeCheckpointCase(const Pristine&, const fs::path& caseDir, Rng&);
Case makeCliCase(const Pristine&, const fs::path& caseDir, Rng&);
Case makePlotCase(const Pristine&, const fs::path& caseDir, Rng&);
Case makeEnvCase(const Pristine&, const fs::path& caseDir, Rng&);
Case makePythonCase(const Pristine&, const fs::path& caseDir, Rng&);

// "model", "data", "checkpoint", "cli", "plot", "env", "python" -> its maker; nullptr for anything
// else.
CaseMaker caseMakerFor(std::string_view target);
inline const std::vector<std::string>& allTargets() {
  static const std::vector<std::string> t{"model", "data", "checkpoint", "cli", "plot", "env", "python"};
  return t;
}

}  // namespace xfuzz
