// JobTrace: the trace of this process as one part of a job (docs/trace.md), started and written by
// its owner: `xtrain --trace FILE`, or a session with engineOptions "trace.file". A process started
// by hand writes FILE; an instance of a launched job writes its part FILE.instance-<K> (and, under
// xrun, leaves the note by which xrun merges the parts into FILE when the job ends).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace xtrain::timeline {

struct JobTraceRequest {
  std::string path;  // FILE
  std::optional<std::pair<int64_t, int64_t>> steps;
  std::string what;  // the flag or option that asked for it, for messages ("--trace")
  // Also write the trace when SIGINT ends the process (timeline::writeOnInterrupt).
  bool writeOnInterrupt = false;
};

class JobTrace {
 public:
  // Checks that the file (this process's part, and FILE for instance 0 of a launched job) can be
  // written — an existing path must be a regular file, its directory must exist and be writable —
  // and starts the trace. Throws xtrain::error naming `what` and the path, before any work.
  explicit JobTrace(const JobTraceRequest& request);
  // Writes the trace and stops it; throws xtrain::runtime_error naming the file when it cannot be
  // written (xtrain then exits 1). Warns when a steps window was given and the job ended before it
  // began (the trace then holds no step). After finish() the destructor does nothing.
  void finish();
  // finish() when it was not called (an exception unwinding, a session destroyed): a failure is
  // logged, not thrown.
  ~JobTrace();
  JobTrace(const JobTrace&) = delete;
  JobTrace& operator=(const JobTrace&) = delete;

  const std::string& file() const { return file_; }  // what this process writes

 private:
  std::string file_;
  std::optional<std::pair<int64_t, int64_t>> steps_;
  std::string what_;
  bool finished_ = false;
};

}  // namespace xtrain::timeline

#pragma GCC visibility pop
