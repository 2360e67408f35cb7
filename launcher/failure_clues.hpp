// What the lines of a failing job say about who failed, beyond which process exited first: the
// instance that reports a failure is often not its cause. Used by xrun's shrinking
// (restart_policy.hpp) to blame the right slots.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace xtrain::launcher {

// Open MPI's report of a daemon it lost (a cut link, a dead host): "ORTE has lost communication
// with a remote daemon." ... "  Remote daemon: [[43993,0],1] on node h2". The host ("h2"), or ""
// when the line is not that one.
std::string hostLostByMpirun(std::string_view line);

// An instance's collective timeout as xtrain's communicators word it: "... in group '<name>' (size
// N) timed out after T ms: ranks [2, 3] did not arrive". The ranks, when the group spans the job's
// `numInstances` instances (the instances' communicators, whose ranks are the instance indices:
// replicas-<k>, preemption); empty otherwise (another line, a subgroup, a rank out of range).
std::vector<int> instancesThatDidNotArrive(std::string_view line, int numInstances);

}  // namespace xtrain::launcher
