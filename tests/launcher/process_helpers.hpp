// Helpers for the real-process tests of xrun: run xrun with a bound, and check that processes are
// gone. Every wait here is bounded. (Child, the process with its output in pipes, is in
// testing/process_testing.hpp.)
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "testing/process_testing.hpp"

namespace xtrain::launcher::testing {

using xtrain::testing::Child;
using xtrain::testing::nowSeconds;
using xtrain::testing::ProcessResult;

// The xrun under test (XTRAIN_BIN_DIR/xrun).
std::string xrunPath();

// Runs xrun with `args`; bounded by timeoutSeconds.
ProcessResult runXrun(const std::vector<std::string>& args, double timeoutSeconds = 30,
                      const std::vector<std::string>& extraEnv = {});

// True once `pid` no longer exists or is a zombie, polling up to timeoutSeconds.
bool processGone(pid_t pid, double timeoutSeconds);

// A fresh private directory; removeTree removes it.
std::string makeTempDir();
void removeTree(const std::string& dir);

// Reads whitespace-separated pids from every file in `dir` whose name starts with `prefix`.
std::vector<pid_t> readPids(const std::string& dir, const std::string& prefix);

// Splits text into lines (no trailing empty line).
std::vector<std::string> splitLines(const std::string& text);

// How often `what` occurs in `text` (overlapping occurrences included).
size_t countOccurrences(const std::string& text, const std::string& what);

// The job ids ("job=<id>" lines) of the environment records in `dir` (files "env-*", and
// "old-env-*" kept from earlier attempts).
std::set<std::string> recordedJobIds(const std::string& dir);

// The "key=value" lines of `dir`/env-<restart>-<instance> (empty when that instance never ran).
std::map<std::string, std::string> recordedEnvironment(const std::string& dir, int restart,
                                                       int instance);

// The training the restart and shrink tests run under xrun: `program` (a wrapper of xtrain) for
// 20 steps of SGD with momentum, a checkpoint every 5 into `checkpointDir` resumed with
// `--resume auto`, the model saved as `checkpointDir`.onnx unless `saveModel` is false.
std::vector<std::string> resumableTraining(const std::string& program,
                                           const std::string& checkpointDir, bool saveModel = true);

// Nothing of a job is left: no process recorded in `dir`'s "pid*" files, nothing in its TMPDIR
// `tmp` (the rendezvous directories), no shared-memory segment of a job recorded in `dir`.
void expectJobLeftNothing(const std::string& dir, const std::string& tmp);

}  // namespace xtrain::launcher::testing
