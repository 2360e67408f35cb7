// xbench optimizer: the cost of one optimizer update, per element, for every family: the update
// kernel of one weight of N elements run R times on one thread (as the session runs it, one
// kernel per replica thread), beside PyTorch's torch.optim step on a tensor of the same size
// (bench/optimizer_peer.py; bench/run-optimizer-vs-peers.sh runs both).
#pragma once

#include <string>
#include <vector>

namespace xbench {

int benchOptimizer(const std::vector<std::string>& args);
const char* optimizerUsage();

}  // namespace xbench
