// xrun's hang report: reads every instance's collective trace (the ring each instance keeps in
// <job directory>/collective-trace-<i>, layout comm/trace_format.hpp) and says, for each instance,
// the last collective it entered and the last it finished, then one verdict line naming who holds
// the job up: "instance 3 never entered allReduce #812 on group world (the others waited 30 s)",
// "instance 1 is in broadcast #12 on group world while the others are in allReduce #12
// (mismatch)". Printed when a collective times out or mismatches, when --timeout fires, and on
// SIGQUIT to xrun (docs/launcher-environment.md, "Hang reports").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/trace_format.hpp"

namespace xtrain::launcher {

struct TracedCollective {
  uint64_t ticket = 0;  // order within the instance
  std::string group;
  std::string op;
  std::string label;  // the collective's debug name, if it has one
  uint64_t seq = 0;
  uint64_t bytes = 0;
  int rank = 0;
  int size = 0;
  int64_t startNs = 0;  // CLOCK_MONOTONIC
  int64_t endNs = 0;    // 0 while in flight
  comm::trace::State state = comm::trace::State::Empty;
  comm::trace::Failure failure = comm::trace::Failure::None;
};

struct InstanceTrace {
  int instance = 0;
  bool found = false;   // a valid trace file was read
  std::string problem;  // why not (missing, damaged, another user's)
  int pid = 0;
  char processState = 0;  // /proc/<pid>/stat's state ('R', 'S', 'T' stopped, ...); 0: gone
  std::vector<TracedCollective> collectives;  // oldest first (by ticket)
};

// Reads `<dir>/collective-trace-<i>` for i in [0, numInstances). A file that is not a regular file
// of this user, or not a trace, counts as missing with the reason.
std::vector<InstanceTrace> readTraces(const std::string& dir, int numInstances);

// Whether some instance recorded a collective that timed out or mismatched.
bool hasCollectiveFailure(const std::vector<InstanceTrace>& traces);

// Whether some instance recorded any collective.
bool hasAnyCollective(const std::vector<InstanceTrace>& traces);

// The report's lines (without "xrun: "): one heading naming `why`, one line per instance, one
// verdict line. nowNs is CLOCK_MONOTONIC (std::chrono::steady_clock) nanoseconds.
std::vector<std::string> hangReport(const std::vector<InstanceTrace>& traces, int64_t nowNs,
                                    const std::string& why);

// The verdict alone ("instance 3 never entered ...").
std::string hangVerdict(const std::vector<InstanceTrace>& traces, int64_t nowNs);

// steady_clock's now in nanoseconds (the traces' clock).
int64_t steadyNowNs();

}  // namespace xtrain::launcher
