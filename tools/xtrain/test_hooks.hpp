// Hooks for tests that need an instance to die or hang at an exact point of training, which a test
// cannot hit reliably from outside on a busy machine. Inert unless the variable is set.
#pragma once

#include <cstdint>

namespace xtrain::tools {

// XTRAIN_TEST_KILL_AT_STEP=S: the process sends itself SIGKILL when it is about to train step S
// (0-based, so after S steps and the checkpoints they wrote), like a crash or the OOM killer.
// Used by the restart tests of xrun (tests/launcher/xrun_restart_test.cpp), which set it for one
// instance of the first attempt only. Throws xtrain::error (exit 2) when the value is not a step.
// XTRAIN_TEST_STOP_AT_STEP=S: at the same point the process stops itself (SIGSTOP), like an
// instance that hangs: its peers time out in their next collective (the shrink tests).
// XTRAIN_TEST_STEP_DELAY_MS=T: sleeps T ms before every step, so that a test can act while a short
// job still trains (the grow test asks a job to stop after a time).
void killSelfIfAskedAt(int64_t step);

}  // namespace xtrain::tools
