// The fuzz targets: each turns (pristine inputs, case directory, case Rng) into a Case, the files
// it puts in the case directory plus the commands that run the tools on them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "rng.hpp"

namespace xfuzz {

// The inputs every case starts from, made once per run by makePristine (pristine.hpp).
struct Pristine {
  fs::path dir;            // model.onnx, data.h5, ckpts/ (ckpt-00000001, ckpt-00000002, latest)
  std::string loss;        // the loss tensor of model.onnx
  std::string microBatch;  // the micro-batch size model.onnx was saved with
  bool deviceNodes = false;  // whether char device nodes can be made in a scratch dir (mknod)
  bool hasXbench = false;    // xbench is built (not in the sanitizer presets): cli cases may use it
};

// One tool invocation of a case. Paths in args are relative to the case directory (the child's
// working directory), so a kept failure directory reproduces with `cd DIR && <command>`.
struct Command {
  std::vector<std::string> args;  // args[0]: the tool's name (xtrain, xckpt, xbench)
  // Entries of the case directory (relative paths, prefix match) the command may change or remove,
  // e.g. the `latest` pointer a resumed run moves. Everything else that existed must stay as it was.
  std::vector<std::string> mayChange;
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

// "model", "data", "checkpoint", "cli" -> its maker; nullptr for anything else.
CaseMaker caseMakerFor(std::string_view target);
inline const std::vector<std::string>& allTargets() {
  static const std::vector<std::string> t{"model", "data", "checkpoint", "cli"};
  return t;
}

}  // namespace xfuzz
