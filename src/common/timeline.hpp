// Timeline: this process's Chrome-trace / Perfetto record of what it did (docs/trace.md). Code
// marks a stretch of work with a Span (a "complete" event: name, category, start, duration, the
// current track, a few arguments); the events go into one bounded ring per process, oldest dropped
// (and counted) when it is full, and write() turns the ring into a trace-event JSON file.
//
// Cost: with no trace started (the default), a Span is one relaxed atomic load and a branch. With
// a trace, a Span reads the steady clock twice and copies its name and arguments into a slot of
// the ring under a mutex. The ring grows by chunks of 4096 events as it first fills (one
// allocation per chunk, none once it wraps): its size is a bound, not what a short trace costs.
//
// Tracks: the process is the instance (pid = instance + 1: Perfetto reserves pid 0 for the
// kernel's idle task); the thread is the replica running the work (tid = global replica + 1) or a
// named host track (tid >= kFirstHostTrack): the main thread, each communicator's executor, the
// checkpoint writer.
#pragma once
#pragma GCC visibility push(default)

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace xtrain::timeline {

enum class Category : uint8_t { Step, Op, Bucket, Collective, Checkpoint, Data, Host };
const char* toString(Category c);

// Track ids (Chrome's "tid"): replicas first, then the host's tracks.
constexpr int kFirstHostTrack = 1000;
constexpr int kMainTrack = kFirstHostTrack;                    // the thread that started the trace
constexpr int kCheckpointWriterTrack = kFirstHostTrack + 999;  // asynchronous saves
inline int replicaTrack(int64_t globalReplica) {
  return static_cast<int>(globalReplica) + 1;
}

// The ring's size when XTRAIN_TRACE_EVENTS is not set.
constexpr size_t kDefaultCapacity = 65536;
constexpr size_t kMaxCapacity = size_t{1} << 24;
// XTRAIN_TRACE_EVENTS (a count of events, 16 .. 16777216), else kDefaultCapacity. Throws
// xtrain::error naming the variable for anything else.
size_t capacityFromEnvironment();

struct Config {
  std::string path;         // the JSON file write() writes (a regular file or a new name)
  int instance = 0;         // pid = instance + 1
  std::string processName;  // "instance 0 (host h1)"
  size_t capacity = kDefaultCapacity;
  // Only steps A..B (1-based, inclusive) are recorded; unset: everything.
  std::optional<std::pair<int64_t, int64_t>> steps;
};

// Starts this process's trace: prepares the ring (its first chunk comes with the first event) and
// draws the name of the temporary write() will use, takes the clocks' origin (ts 0), names the
// process and the calling thread's track (kMainTrack, "host: main"). Throws xtrain::error when a
// trace is already started (one per process) or the config is invalid.
void start(const Config& config);
bool started();
const std::string& path();  // "" when not started
// Writes the ring to path() (a temporary file renamed into place: a reader never sees half a
// file; the temporary has an unforeseeable name and is created O_EXCL|O_NOFOLLOW, so nothing
// planted beside the path is written through: common/temporary_file.hpp) and ends the recording (a
// second write() does nothing; SIGINT's handler neither). Throws xtrain::runtime_error naming the
// path when it cannot be written.
void write();
// Ends the trace (nothing more is recorded; the ring is freed). Does not write.
void stop();

// "A..B" of Config::steps, parsed from "A:B" (1-based, A <= B). Throws xtrain::error naming `what`
// (the flag or option) and the text.
std::pair<int64_t, int64_t> parseStepRange(const std::string& text, std::string_view what);

// SIGINT, while a trace is started: write() from the signal handler with async-signal-safe calls
// only (open, write, rename, unlink: the ring's chunks and the temporary's name are allocated
// before the signal, the name drawn by start(), so the handler allocates nothing and still never
// uses a name another user could foresee), then the default action (the
// process ends as Ctrl-C would end it). Events being recorded by other threads at that moment may
// come out torn (odd names or times), never as invalid JSON.
void writeOnInterrupt();

namespace detail {
extern std::atomic<bool> gRecording;
struct Slot;
void record(Category category, const char* name, int64_t startNs, int64_t endNs,
            const char* const* argKeys, const int64_t* argValues, int numArgs, const char* textKey,
            std::string_view text);
int64_t nowNs();
}  // namespace detail

// Whether events are being recorded now (started, and inside the steps window).
inline bool recording() {
  return detail::gRecording.load(std::memory_order_relaxed);
}

// Names a track once (Chrome's thread_name metadata; the first name given wins).
void nameTrack(int track, std::string_view name);
// The calling thread's track for a scope, then the previous one again: a replica's work on
// whichever thread runs it.
class TrackScope {
 public:
  TrackScope(int track, std::string_view name);
  ~TrackScope();
  TrackScope(const TrackScope&) = delete;
  TrackScope& operator=(const TrackScope&) = delete;

 private:
  int previous_;
};
// The calling thread's track when it has none yet: a fresh host track named `name` (an
// executor's thread); else leaves it alone. Cheap after the first call on a thread.
void nameThisThreadOnce(std::string_view name);

// One complete event from construction to destruction on the calling thread's track. `name` is
// copied (at most 63 bytes); up to three integer arguments and one text argument (at most 47
// bytes: a longer one keeps its end, after "...") with keys of static storage. Nothing is recorded
// unless recording() at construction.
class Span {
 public:
  Span(Category category, std::string_view name) {
    if (recording()) begin(category, name);
  }
  ~Span() {
    if (active_) end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  bool active() const { return active_; }
  Span& arg(const char* key, int64_t value) {
    if (active_ && numArgs_ < 3) {
      keys_[numArgs_] = key;
      values_[numArgs_++] = value;
    }
    return *this;
  }
  Span& text(const char* key, std::string_view value);

 private:
  void begin(Category category, std::string_view name);
  void end();

  // Only active_ is set when nothing is recorded: an op's Span costs one load and a branch, not
  // the clearing of these buffers. begin() sets the rest.
  bool active_ = false;
  Category category_;
  int numArgs_;
  int64_t startNs_;
  const char* keys_[3];
  int64_t values_[3];
  const char* textKey_;
  char name_[64];
  char text_[48];
};

// Step boundaries. A caller that numbers steps itself (xtrain counts from a resumed checkpoint's
// step) calls enterStep(n) before the step's work (its data loading); the first StepSpan (the
// session's run()) after it is step n, and further ones until the next enterStep() are runs
// within step n ("run in step n", category host: xtrain's validation). Without enterStep() each
// StepSpan is the step after the last one. Both update recording() for the steps window. Numbers
// are 1-based.
void enterStep(int64_t step);
// The number of the last step entered or counted (0 before the first).
int64_t lastStep();
class StepSpan {
 public:
  StepSpan();
  int64_t step() const { return step_; }

 private:
  explicit StepSpan(std::optional<int64_t> step);

  int64_t step_;
  Span span_;
};

// What the ring holds: for tests and the trace's own labels.
struct Stats {
  size_t capacity = 0;
  uint64_t recorded = 0;  // events ever recorded
  uint64_t dropped = 0;   // the oldest ones overwritten
};
Stats stats();

}  // namespace xtrain::timeline

#pragma GCC visibility pop
