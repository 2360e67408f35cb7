// xbench checkpoint-stall: what a checkpoint costs a training session. A session trains a model
// with one large weight (SGD with momentum, so weight + velocity are saved); the benchmark measures
// the step time, a synchronous saveCheckpoint, and an asynchronous one: how long the call blocks
// and how much longer the steps run while the write goes on in the background.
#pragma once

#include <string>
#include <vector>

namespace xbench {

int benchCheckpointStall(const std::vector<std::string>& args);
const char* checkpointStallUsage();

}  // namespace xbench
