// Makes the pristine inputs of a run with the tools themselves (the harness links no xtrain code):
// the built-in example's model saved by `xtrain --save-model`, a matching HDF5 data set written by
// HDF5's own h5import, and a checkpoint directory written by a two-step `xtrain` run.
#pragma once

#include <string>

#include "targets.hpp"

namespace xfuzz {

struct ToolRunner;  // runner.hpp

// Throws std::runtime_error saying which step failed and what the tool printed.
Pristine makePristine(const ToolRunner& tools, const fs::path& dir);

// Copies the pristine model, data set and checkpoint directory into a case's directory, for the
// targets that run the tools on undamaged inputs (cli, env).
void copyPristineInputs(const Pristine& p, const fs::path& caseDir);

}  // namespace xfuzz
