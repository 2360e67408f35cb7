// xbench checkpoint: the time to save one checkpoint of N FLOAT tensors (writePart + writeIndex +
// commit, fsync included), for comparison with a plain sequential write of the same bytes (dd
// conv=fsync) and torch.save in bench/run-checkpoint-vs-peers.sh.
#pragma once

#include <string>
#include <vector>

namespace xbench {

int benchCheckpoint(const std::vector<std::string>& args);
const char* checkpointUsage();

}  // namespace xbench
