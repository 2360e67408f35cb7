// SessionProfile: what a session's run() calls did since the profile was last reset (at
// prepareDevice, and by getSummaryReport(resetProfile = true)): runs, batches and micro-batches,
// wall time in run(), host transfers (inputs in, anchors out), collectives per communicator and the
// simulated clock's cycles (session/cycle_model.hpp). Per-op times live beside it in replica 0's
// programs (LoweredGraph::setProfiling); the report (session_report.cpp) reads both.
//
// Always on: each record is a few additions and at most two clock reads per micro-batch or
// collective, far below a step's time (docs/reports.md has the measured cost). Not thread-safe:
// the session's thread writes it, and replica 0's thread writes the collectives of the model's
// replicated ops while the session's thread waits for the replicas.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace xtrain::session {

// Host transfers of one direction: buffers copied, their bytes, the seconds the copies took.
struct TransferStats {
  uint64_t count = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};

// One kind of collective on one communicator.
struct CollectiveStats {
  uint64_t calls = 0;
  uint64_t bytes = 0;  // each member's input, summed over the calls
  double seconds = 0;
};

// A communicator as the report names it: what it connects ("replicas", a ReplicaGrouping), its
// group size, and the operation ("all-reduce", "reduce-scatter", "all-gather"), plus what moved
// through it ("gradients", an op type).
struct CollectiveKey {
  std::string communicator;
  int64_t groupSize = 0;
  std::string operation;
  std::string what;
  bool operator<(const CollectiveKey& o) const {
    return std::tie(communicator, groupSize, operation, what) <
           std::tie(o.communicator, o.groupSize, o.operation, o.what);
  }
};

struct SessionProfile {
  uint64_t runs = 0;
  uint64_t batches = 0;
  uint64_t microBatches = 0;
  double runSeconds = 0;
  TransferStats inputs;
  TransferStats anchors;
  std::map<CollectiveKey, CollectiveStats> collectives;
  // The simulated clock (instrumentWithHardwareCycleCounter): the cycles of the last run() on
  // replica 0, the run being counted, and the total since the reset.
  uint64_t lastRunCycles = 0;
  uint64_t currentRunCycles = 0;
  uint64_t totalCycles = 0;

  void addCollective(const CollectiveKey& key, uint64_t bytes, double seconds) {
    CollectiveStats& s = collectives[key];
    ++s.calls;
    s.bytes += bytes;
    s.seconds += seconds;
  }
  // Zeroes the counters (lastRunCycles stays: it is the device's counter, read by getCycleCount).
  void reset() {
    const uint64_t last = lastRunCycles;
    *this = SessionProfile{};
    lastRunCycles = last;
  }
};

}  // namespace xtrain::session

#pragma GCC visibility pop
