#include "common/timeline.hpp"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "common/env_value.hpp"
#include "common/json_writer.hpp"
#include "common/temporary_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain::timeline {

namespace detail {

std::atomic<bool> gRecording{false};

struct Slot {
  int64_t startNs = 0;
  int64_t durNs = 0;
  int track = 0;
  Category category = Category::Host;
  int numArgs = 0;
  const char* keys[3] = {};
  int64_t values[3] = {};
  const char* textKey = nullptr;
  char name[64] = {};
  char text[48] = {};
};

}  // namespace detail

namespace {

using detail::Slot;

constexpr int kMaxTracks = 256;

// The ring's slots, in chunks allocated the first time the ring reaches them: XTRAIN_TRACE_EVENTS
// at its maximum (16777216 events of 200 bytes, 3.3 GB) is a bound, not an up-front allocation,
// and a short trace costs the chunks its events fill. Chunks are reached in order before the ring
// first wraps, so the slots below the highest one used are all allocated.
class RingChunks {
 public:
  static constexpr size_t kChunkSlots = 4096;  // about 800 KB

  explicit RingChunks(size_t capacity)
      : capacity_(capacity),
        numChunks_((capacity + kChunkSlots - 1) / kChunkSlots),
        chunks_(std::make_unique<std::unique_ptr<Slot[]>[]>(numChunks_)) {}

  // Slot `i` (< capacity), its chunk allocated on first use; nullptr when that allocation fails.
  Slot* forWriting(size_t i) {
    std::unique_ptr<Slot[]>& chunk = chunks_[i / kChunkSlots];
    if (!chunk) {
      const size_t first = i / kChunkSlots * kChunkSlots;
      chunk.reset(new (std::nothrow) Slot[std::min(kChunkSlots, capacity_ - first)]);
      if (!chunk) return nullptr;
    }
    return &chunk[i % kChunkSlots];
  }
  // Slot `i`, already written (async-signal-safe).
  const Slot& at(size_t i) const { return chunks_[i / kChunkSlots][i % kChunkSlots]; }

 private:
  size_t capacity_;
  size_t numChunks_;
  std::unique_ptr<std::unique_ptr<Slot[]>[]> chunks_;
};

struct Track {
  int id = 0;
  char name[48] = {};
};

// The process's trace. Everything the signal handler reads is allocated by start() and stays
// until stop(); the handler runs only while `started` is set.
struct State {
  std::mutex mu;  // guards the ring, the tracks and the config
  std::atomic<bool> started{false};
  Config config;
  // The trace's temporary, its unforeseeable name drawn by start(): SIGINT's handler creates,
  // fills and renames it without allocating.
  std::unique_ptr<SiblingTemporary> tmp;
  std::unique_ptr<RingChunks> ring;
  // The ring's size: config.capacity, less when memory for a chunk ran out (then the chunks
  // allocated). 0 when not started.
  std::atomic<size_t> capacity{0};
  std::atomic<uint64_t> head{0};  // events ever recorded; the next slot is head % capacity
  int64_t originSteadyNs = 0;
  int64_t originRealtimeNs = 0;
  Track tracks[kMaxTracks];
  std::atomic<int> numTracks{0};
  std::atomic<int> nextHostTrack{kFirstHostTrack + 1};
  std::atomic<int64_t> step{0};
  std::atomic<bool> stepEntered{false};
  std::atomic<bool> callerNumbers{false};  // enterStep() was called: run()s do not count steps
  std::atomic<bool> handlerInstalled{false};
};

State& state() {
  static State* s = new State();  // never destroyed: the signal handler may read it at exit
  return *s;
}

thread_local int tTrack = 0;  // 0: this thread has no track yet

int64_t clockNs(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Copies at most size - 1 bytes of `text` into `out`, cut at a UTF-8 character boundary.
void copyName(char* out, size_t size, std::string_view text) {
  size_t n = std::min(text.size(), size - 1);
  if (n < text.size()) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  }
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Copies `text` into `out` (size bytes with the NUL); a longer text keeps its end, after "...":
// what tells paths apart is their last part.
void copyTail(char* out, size_t size, std::string_view text) {
  if (text.size() < size) {
    copyName(out, size, text);
    return;
  }
  size_t from = text.size() - (size - 4);
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
  std::memcpy(out, "...", 3);
  std::memcpy(out + 3, text.data() + from, text.size() - from);
  out[3 + text.size() - from] = '\0';
}

void updateRecording(State& s) {
  bool on = s.started.load();
  if (on && s.config.steps) {
    const int64_t step = s.step.load();
    on = step >= s.config.steps->first && step <= s.config.steps->second;
  }
  detail::gRecording.store(on, std::memory_order_relaxed);
}

// Registers a track's name (the first one wins); the caller holds s.mu.
void addTrackLocked(State& s, int id, std::string_view name) {
  const int n = s.numTracks.load();
  for (int i = 0; i < n; ++i) {
    if (s.tracks[i].id == id) return;
  }
  if (n == kMaxTracks) return;  // unnamed tracks still show, by number
  s.tracks[n].id = id;
  copyName(s.tracks[n].name, sizeof s.tracks[n].name, name);
  s.numTracks.store(n + 1);
}

// A new host thread's track id; past the range, the threads share its last id (drawn as one
// track) rather than run into the checkpoint writer's.
int newHostTrack(State& s) {
  const int id = s.nextHostTrack.fetch_add(1);
  return id < kCheckpointWriterTrack ? id : kCheckpointWriterTrack - 1;
}

int currentTrack() {
  if (tTrack == 0) {
    State& s = state();
    tTrack = newHostTrack(s);
    char name[32];
    std::snprintf(name, sizeof name, "host thread %d", tTrack - kFirstHostTrack);
    std::lock_guard lock(s.mu);
    addTrackLocked(s, tTrack, name);
  }
  return tTrack;
}

// The text of a fixed-size field: up to its first NUL or its end.
std::string_view fieldText(const char* field, size_t size) {
  size_t n = 0;
  while (n < size && field[n] != '\0') ++n;
  return {field, n};
}

// The whole trace as JSON into `out`: async-signal-safe (no allocation, no locks taken here).
// One event a line: xrun's merge (timeline_merge.cpp) reads the parts line by line.
void writeJson(const State& s, json::Sink& out) {
  const int pid = s.config.instance + 1;
  const uint64_t head = s.head.load();
  const size_t capacity = s.capacity.load();
  const uint64_t dropped = head > capacity ? head - capacity : 0;
  json::Writer w(out);
  w.beginObject()
      .key("otherData")
      .beginObject()
      .field("xtrainOriginRealtimeNs", s.originRealtimeNs)
      .field("ringEvents", static_cast<int64_t>(capacity))
      .field("droppedEvents", static_cast<int64_t>(dropped))
      .endObject()
      .field("displayTimeUnit", "ms")
      .key("traceEvents")
      .beginArray(json::Writer::Layout::LinePerMember);
  auto metadata = [&](const char* name, int tid, const char* key, const char* text, int64_t value) {
    w.beginObject().field("ph", "M").field("pid", pid).field("tid", tid).field("ts", 0);
    w.field("name", name).key("args").beginObject().key(key);
    if (text != nullptr) {
      w.value(text);
    } else {
      w.value(value);
    }
    w.endObject().endObject();
  };
  metadata("process_name", 0, "name", s.config.processName.c_str(), 0);
  metadata("process_sort_index", 0, "sort_index", nullptr, s.config.instance);
  // snprintf is not async-signal-safe: the label is built with the JSON formatters.
  char labels[96];
  json::Sink label(labels, sizeof labels);
  label.append("ring of ");
  json::writeInteger(label, static_cast<int64_t>(capacity));
  label.append(" events, ");
  json::writeInteger(label, static_cast<int64_t>(dropped));
  label.append(" oldest dropped");
  metadata("process_labels", 0, "labels", label.c_str(), 0);
  const int tracks = std::min(s.numTracks.load(), kMaxTracks);
  for (int i = 0; i < tracks; ++i) {
    metadata("thread_name", s.tracks[i].id, "name", s.tracks[i].name, 0);
    metadata("thread_sort_index", s.tracks[i].id, "sort_index", nullptr, s.tracks[i].id);
  }
  // Oldest first; ts 0 is this process's start (xrun's merge aligns the instances by
  // xtrainOriginRealtimeNs).
  const uint64_t count = std::min<uint64_t>(head, capacity);
  for (uint64_t k = head - count; k < head; ++k) {
    const Slot& e = s.ring->at(k % capacity);
    w.beginObject().field("ph", "X").field("pid", pid).field("tid", e.track);
    w.key("ts").micros(e.startNs).key("dur").micros(std::max<int64_t>(0, e.durNs));
    w.field("cat", toString(e.category)).field("name", fieldText(e.name, sizeof e.name));
    w.key("args").beginObject();
    const int n = std::clamp(e.numArgs, 0, 3);
    for (int a = 0; a < n; ++a) w.field(e.keys[a] != nullptr ? e.keys[a] : "arg", e.values[a]);
    if (e.textKey != nullptr) w.field(e.textKey, fieldText(e.text, sizeof e.text));
    w.endObject().endObject();
  }
  w.endArray().endObject();
  out.put('\n');
}

// Writes the trace to a new temporary file (never to what another user may have planted beside the
// path: SiblingTemporary) and renames it over the path; false with errno set on a failure.
// Async-signal-safe: the temporary's name was drawn by start().
bool writeFile(const State& s) {
  const int fd = s.tmp->create(0644);
  if (fd < 0) return false;
  char buffer[8192];
  json::Sink out(fd, buffer, sizeof buffer);
  writeJson(s, out);
  const bool ok = out.finish();
  const int err = errno;
  ::close(fd);
  if (!ok) {
    s.tmp->discard();
    errno = err;
    return false;
  }
  return s.tmp->publish();
}

void onInterrupt(int sig) {
  State& s = state();
  const int savedErrno = errno;
  detail::gRecording.store(false, std::memory_order_relaxed);
  if (s.started.exchange(false)) writeFile(s);
  errno = savedErrno;
  // The default action now: the process ends by the signal, as without a trace.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

}  // namespace

const char* toString(Category c) {
  switch (c) {
    case Category::Step: return "step";
    case Category::Op: return "op";
    case Category::Bucket: return "bucket";
    case Category::Collective: return "collective";
    case Category::Checkpoint: return "checkpoint";
    case Category::Data: return "data";
    case Category::Host: return "host";
  }
  return "host";
}

size_t capacityFromEnvironment() {
  return static_cast<size_t>(
      readEnvWholeNumber("XTRAIN_TRACE_EVENTS", 16, static_cast<int64_t>(kMaxCapacity))
          .value_or(static_cast<int64_t>(kDefaultCapacity)));
}

std::pair<int64_t, int64_t> parseStepRange(const std::string& text, std::string_view what) {
  const auto colon = text.find(':');
  auto number = [&](const std::string& part) -> int64_t {
    int64_t v = 0;
    if (part.empty() || part.size() > 18 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw error("{} '{}': expected A:B, two step numbers (1-based, A <= B), e.g. 3:5", what,
                  text);
    }
    for (char c : part) v = v * 10 + (c - '0');
    return v;
  };
  if (colon == std::string::npos) {
    throw error("{} '{}': expected A:B, two step numbers (1-based, A <= B), e.g. 3:5", what, text);
  }
  const int64_t a = number(text.substr(0, colon));
  const int64_t b = number(text.substr(colon + 1));
  if (a < 1) throw error("{} '{}': steps count from 1, got {}", what, text, a);
  if (a > b) throw error("{} '{}': the first step {} is after the last {}", what, text, a, b);
  return {a, b};
}

void start(const Config& config) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.started.load()) {
    throw error(
        "a trace is already being recorded to '{}' (one per process); cannot start one "
        "to '{}'",
        s.config.path, config.path);
  }
  if (config.path.empty()) throw error("the trace needs a file path, got an empty one");
  if (config.capacity < 16 || config.capacity > kMaxCapacity) {
    throw error("the trace ring's size {} is not in 16 .. {} events", config.capacity,
                kMaxCapacity);
  }
  if (config.steps && (config.steps->first < 1 || config.steps->first > config.steps->second)) {
    throw error("the trace's steps {}:{} are not A:B with 1 <= A <= B", config.steps->first,
                config.steps->second);
  }
  s.config = config;
  s.tmp = std::make_unique<SiblingTemporary>(config.path);
  s.ring = std::make_unique<RingChunks>(config.capacity);
  s.capacity.store(config.capacity);
  s.head.store(0);
  // The track names stay: ids are the process's (threads keep theirs across traces), and a thread
  // that named its track before this trace started (a communicator's executor) is not asked again.
  s.step.store(0);
  s.stepEntered.store(false);
  s.callerNumbers.store(false);
  s.originSteadyNs = clockNs(CLOCK_MONOTONIC);
  s.originRealtimeNs = clockNs(CLOCK_REALTIME);
  tTrack = kMainTrack;
  addTrackLocked(s, kMainTrack, "host: main");
  s.started.store(true);
  updateRecording(s);
}

bool started() {
  return state().started.load();
}

const std::string& path() {
  static const std::string none;
  State& s = state();
  return s.started.load() ? s.config.path : none;
}

void write() {
  State& s = state();
  std::lock_guard lock(s.mu);
  // Taking `started` here keeps SIGINT's handler (onInterrupt) from writing the same file at the
  // same time: whichever of the two takes it writes, the other does nothing.
  if (!s.started.exchange(false)) return;
  detail::gRecording.store(false);
  if (!writeFile(s)) {
    throw runtime_error("cannot write the trace to '{}': {}", s.config.path, std::strerror(errno));
  }
}

void stop() {
  State& s = state();
  detail::gRecording.store(false);
  std::lock_guard lock(s.mu);
  s.started.store(false);
  // With SIGINT's handler installed, a signal taken on another thread may be writing the ring
  // right now: leave it allocated (a process that installs the handler is ending anyway).
  if (s.handlerInstalled.load()) {
    (void)s.ring.release();
    (void)s.tmp.release();
  } else {
    s.ring.reset();
    s.tmp.reset();
  }
  s.capacity.store(0);
  s.head.store(0);
}

void writeOnInterrupt() {
  State& s = state();
  if (s.handlerInstalled.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  if (::sigaction(SIGINT, &sa, nullptr) != 0) {
    s.handlerInstalled.store(false);
    throw runtime_error("cannot install the trace's SIGINT handler: {}", std::strerror(errno));
  }
}

namespace detail {

int64_t nowNs() {
  return clockNs(CLOCK_MONOTONIC);
}

void record(Category category, const char* name, int64_t startNs, int64_t endNs,
            const char* const* argKeys, const int64_t* argValues, int numArgs, const char* textKey,
            std::string_view text) {
  State& s = state();
  const int track = currentTrack();
  std::lock_guard lock(s.mu);
  const size_t capacity = s.capacity.load();
  if (!s.started.load() || capacity == 0) return;
  const uint64_t k = s.head.load(std::memory_order_relaxed);
  Slot* slot = s.ring->forWriting(k % capacity);
  if (slot == nullptr) {
    // No memory for the next chunk: the ring keeps the chunks it has, all filled once (the ring
    // has not wrapped yet), and drops its oldest events from now on. Nothing at all to keep: the
    // event is lost.
    if (k == 0) return;
    s.capacity.store(static_cast<size_t>(k));
    slot = s.ring->forWriting(0);
  }
  Slot& e = *slot;
  e.startNs = startNs - s.originSteadyNs;
  e.durNs = endNs - startNs;
  e.track = track;
  e.category = category;
  e.numArgs = numArgs;
  for (int a = 0; a < numArgs; ++a) {
    e.keys[a] = argKeys[a];
    e.values[a] = argValues[a];
  }
  e.textKey = textKey;
  copyName(e.name, sizeof e.name, name);
  copyName(e.text, sizeof e.text, text);
  s.head.store(k + 1);
}

}  // namespace detail

void nameTrack(int track, std::string_view name) {
  State& s = state();
  std::lock_guard lock(s.mu);
  addTrackLocked(s, track, name);
}

TrackScope::TrackScope(int track, std::string_view name) : previous_(tTrack) {
  tTrack = track;
  if (started()) nameTrack(track, name);
}

TrackScope::~TrackScope() {
  tTrack = previous_;
}

void nameThisThreadOnce(std::string_view name) {
  if (tTrack != 0) return;
  State& s = state();
  tTrack = newHostTrack(s);
  nameTrack(tTrack, name);
}

Span& Span::text(const char* key, std::string_view value) {
  if (active_) {
    textKey_ = key;
    copyTail(text_, sizeof text_, value);
  }
  return *this;
}

void Span::begin(Category category, std::string_view name) {
  active_ = true;
  category_ = category;
  numArgs_ = 0;
  textKey_ = nullptr;
  copyName(name_, sizeof name_, name);
  startNs_ = detail::nowNs();
}

void Span::end() {
  detail::record(category_, name_, startNs_, detail::nowNs(), keys_, values_, numArgs_, textKey_,
                 textKey_ != nullptr ? std::string_view(text_) : std::string_view());
}

void enterStep(int64_t step) {
  State& s = state();
  s.callerNumbers.store(true);
  s.step.store(step);
  s.stepEntered.store(true);
  updateRecording(s);
}

int64_t lastStep() {
  return state().step.load();
}

namespace {

// The step a run() is: the one the caller entered (first run after enterStep()), or, when no
// caller numbers steps, the next one. A further run() in a step the caller numbered (xtrain's
// validation) is not a step of its own: nullopt.
std::optional<int64_t> takeStep() {
  State& s = state();
  if (s.stepEntered.exchange(false)) return s.step.load();
  if (s.callerNumbers.load()) return std::nullopt;
  s.step.fetch_add(1);
  updateRecording(s);
  return s.step.load();
}

}  // namespace

StepSpan::StepSpan() : StepSpan(takeStep()) {}

StepSpan::StepSpan(std::optional<int64_t> step)
    : step_(step.value_or(state().step.load())),
      span_(step ? Category::Step : Category::Host, !recording() ? std::string()
                                                    : step
                                                        ? "step " + std::to_string(*step)
                                                        : "run in step " + std::to_string(step_)) {
  if (step) span_.arg("step", step_);
}

Stats stats() {
  State& s = state();
  std::lock_guard lock(s.mu);
  Stats st;
  st.capacity = s.capacity.load();
  st.recorded = s.head.load();
  st.dropped = st.recorded > st.capacity ? st.recorded - st.capacity : 0;
  return st;
}

}  // namespace xtrain::timeline
