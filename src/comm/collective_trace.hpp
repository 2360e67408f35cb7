// CollectiveTrace: this process's ring of its last collectives, in a file that xrun reads for its
// hang report (layout: comm/trace_format.hpp; the report: docs/launcher-environment.md, "Hang
// reports"). QueuedCommunicator records every collective it runs: when it starts (entered) and when
// it ends (finished, or failed and how). Recording is a few stores into the mapped file and two
// reads of the coarse monotonic clock (vDSO, no system call): about 20 ns per collective.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <memory>
#include <string>

#include "comm/trace_format.hpp"

namespace xtrain::comm {

class CollectiveTrace {
 public:
  // The process's trace: `<XTRAIN_RENDEZVOUS_DIR>/collective-trace-<XTRAIN_INSTANCE_INDEX>`,
  // created on first use. nullptr (tracing off) without XTRAIN_RENDEZVOUS_DIR, with
  // XTRAIN_COMM_TRACE=0, or when the file cannot be created (logged once as a warning). It lives
  // (mapped) until the process ends.
  static CollectiveTrace* process();

  // Creates (O_EXCL | O_NOFOLLOW, mode 0600; an existing file of an earlier run is replaced) and
  // maps the file at `path`. Throws xtrain::runtime_error.
  static std::unique_ptr<CollectiveTrace> create(const std::string& path, int instance);

  ~CollectiveTrace();
  CollectiveTrace(const CollectiveTrace&) = delete;
  CollectiveTrace& operator=(const CollectiveTrace&) = delete;

  // A collective starts running; returns its ticket for end().
  uint64_t enter(const std::string& group, int rank, int size, const char* op, uint64_t seq,
                 uint64_t bytes, const std::string& label = {});
  // It ended (Finished, or Failed with how). A slot reused meanwhile is left alone.
  void end(uint64_t ticket, trace::State state, trace::Failure failure = trace::Failure::None);

  const std::string& path() const { return path_; }

 private:
  CollectiveTrace(std::string path, void* base);

  std::string path_;
  void* base_ = nullptr;
};

// CLOCK_MONOTONIC_COARSE in nanoseconds (CLOCK_MONOTONIC's time line at the kernel's tick
// resolution): the clock of the trace's times.
int64_t monotonicNanoseconds();

}  // namespace xtrain::comm

#pragma GCC visibility pop
