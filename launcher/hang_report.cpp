#include "launcher/hang_report.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "xtrain/format.hpp"

namespace xtrain::launcher {

namespace trace = comm::trace;

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

std::string fixedString(const char* text, size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

char processStateOf(int pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return 0;
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

// Reads one mapped trace; false with `problem` set when it is not a usable trace.
bool readMapped(const void* base, InstanceTrace& out) {
  const auto* h = static_cast<const trace::Header*>(base);
  if (std::memcmp(h->magic, trace::kMagic, sizeof h->magic) != 0 || h->version != trace::kVersion ||
      h->slots != trace::kSlots) {
    out.problem = "not a collective trace of this version";
    return false;
  }
  out.pid = h->pid;
  const trace::Slot* slots = trace::slotsOf(base);
  for (uint32_t i = 0; i < trace::kSlots; ++i) {
    trace::Slot s{};
    bool ok = false;
    for (int attempt = 0; attempt < 100 && !ok; ++attempt) ok = trace::readSlot(slots[i], s);
    if (!ok || static_cast<trace::State>(s.state) == trace::State::Empty) continue;
    TracedCollective c;
    c.ticket = s.ticket;
    c.group = fixedString(s.group, sizeof s.group);
    c.op = fixedString(s.op, sizeof s.op);
    c.label = fixedString(s.label, sizeof s.label);
    c.seq = s.seq;
    c.bytes = s.bytes;
    c.rank = s.rank;
    c.size = s.size;
    c.startNs = s.startNs;
    c.endNs = s.endNs;
    c.state = static_cast<trace::State>(s.state);
    c.failure = static_cast<trace::Failure>(s.failure);
    out.collectives.push_back(std::move(c));
  }
  std::sort(
      out.collectives.begin(), out.collectives.end(),
      [](const TracedCollective& a, const TracedCollective& b) { return a.ticket < b.ticket; });
  return true;
}

InstanceTrace readOne(const std::string& dir, int instance) {
  InstanceTrace t;
  t.instance = instance;
  const std::string path = dir + "/" + trace::fileName(instance);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    t.problem = errno == ENOENT ? "no trace (it ran no collective yet)"
                                : format("cannot open {}: {}", path, std::strerror(errno));
    return t;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_size != static_cast<off_t>(trace::kFileSize)) {
    ::close(fd);
    t.problem = format("{} is not a trace file of this user", path);
    return t;
  }
  void* base = ::mmap(nullptr, trace::kFileSize, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    t.problem = format("cannot map {}: {}", path, std::strerror(errno));
    return t;
  }
  t.found = readMapped(base, t);
  ::munmap(base, trace::kFileSize);
  if (t.found) t.processState = processStateOf(t.pid);
  return t;
}

std::string seconds(int64_t ns) {
  const double s = static_cast<double>(std::max<int64_t>(ns, 0)) / 1e9;
  if (s >= 10) return format("{:.0f} s", s);
  return format("{:.1f} s", s);
}

std::string bytesText(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return format("{:.1f} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (uint64_t{1} << 20)) return format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= (uint64_t{1} << 10)) return format("{:.1f} KiB", static_cast<double>(b) / (1 << 10));
  return format("{} B", b);
}

bool isCreation(const TracedCollective& c) {
  return c.op == trace::kCreateOp;
}

std::string name(const TracedCollective& c) {
  if (isCreation(c)) return format("the creation of group {}", c.group);
  return format("{} #{} on group {}", c.op, c.seq, c.group);
}

// name() with the debug name: "allReduce #3 'gradient bucket of w' on group world".
std::string fullName(const TracedCollective& c) {
  if (c.label.empty() || isCreation(c)) return name(c);
  return format("{} #{} '{}' on group {}", c.op, c.seq, c.label, c.group);
}

bool unfinished(const TracedCollective& c) {
  return c.state == trace::State::Entered || c.state == trace::State::Failed;
}

std::string stateText(char state) {
  switch (state) {
    case 0: return "exited";
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "in uninterruptible sleep";
    case 'T': return "stopped";
    case 't': return "stopped by a debugger";
    case 'Z': return "exited";
    default: return std::string("state ") + state;
  }
}

bool stopped(const InstanceTrace& t) {
  return t.processState == 'T' || t.processState == 't';
}

// Where a collective stands in its group: the creation first, then the sequence numbers.
uint64_t position(const TracedCollective& c) {
  return isCreation(c) ? 0 : c.seq + 1;
}

// The latest collective of `t` in `group` (highest position), if any.
const TracedCollective* latestIn(const InstanceTrace& t, const std::string& group) {
  const TracedCollective* best = nullptr;
  for (const auto& c : t.collectives) {
    if (c.group == group && (best == nullptr || position(c) > position(*best) ||
                             (position(c) == position(*best) && c.ticket > best->ticket))) {
      best = &c;
    }
  }
  return best;
}

std::string instanceList(const std::vector<int>& ids) {
  std::string out = ids.size() == 1 ? "instance " : "instances ";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out;
}

std::string instanceLine(const InstanceTrace& t, int64_t now) {
  std::string head = format("instance {}", t.instance);
  if (!t.found) return head + ": " + t.problem;
  head += format(" (pid {}, {})", t.pid, stateText(t.processState));
  if (t.collectives.empty()) return head + ": no collective yet";
  const TracedCollective& last = t.collectives.back();
  std::string text;
  switch (last.state) {
    case trace::State::Entered:
      text = format("in {} ({}) for {}", fullName(last), bytesText(last.bytes),
                    seconds(now - last.startNs));
      break;
    case trace::State::Failed:
      text = format("{} ({}) failed after {} ({}), {} ago", fullName(last), bytesText(last.bytes),
                    seconds(last.endNs - last.startNs), trace::toString(last.failure),
                    seconds(now - last.endNs));
      break;
    default:
      text = format("last entered {} ({}), finished {} ago", fullName(last), bytesText(last.bytes),
                    seconds(now - last.endNs));
      return head + ": " + text + "; in no collective since";
  }
  const TracedCollective* done = nullptr;
  for (const auto& c : t.collectives) {
    if (c.state == trace::State::Finished) done = &c;
  }
  if (done == nullptr) return head + ": " + text + "; finished none before";
  return head + ": " + text +
         format("; last finished {}, {} ago", name(*done), seconds(now - done->endNs));
}

// Where an instance missing from a collective is instead.
std::string whereInstead(const InstanceTrace& t, const std::string& group, int64_t now) {
  std::string where;
  if (!t.found) {
    where = t.problem;
  } else if (t.collectives.empty()) {
    where = "it recorded no collective at all";
  } else {
    const TracedCollective& last = t.collectives.back();
    if (unfinished(last) && last.group != group) {
      where = format("it is in {} (for {})", name(last), seconds(now - last.startNs));
    } else if (last.state == trace::State::Finished) {
      where =
          format("its last collective, {}, finished {} ago", name(last), seconds(now - last.endNs));
    } else {
      where = format("its last collective is {}", name(last));
    }
  }
  if (stopped(t)) where += format("; it is stopped (pid {}: SIGSTOP or a debugger)", t.pid);
  if (t.found && t.processState == 0) where += "; its process has exited";
  return where;
}

}  // namespace

std::vector<InstanceTrace> readTraces(const std::string& dir, int numInstances) {
  std::vector<InstanceTrace> out;
  for (int i = 0; i < numInstances; ++i) out.push_back(readOne(dir, i));
  return out;
}

bool hasCollectiveFailure(const std::vector<InstanceTrace>& traces) {
  for (const auto& t : traces) {
    for (const auto& c : t.collectives) {
      if (c.state == trace::State::Failed &&
          (c.failure == trace::Failure::Timeout || c.failure == trace::Failure::Mismatch)) {
        return true;
      }
    }
  }
  return false;
}

bool hasAnyCollective(const std::vector<InstanceTrace>& traces) {
  return std::any_of(traces.begin(), traces.end(),
                     [](const InstanceTrace& t) { return !t.collectives.empty(); });
}

namespace {

// Who of a group's members reached its furthest collective in time.
struct Attendance {
  std::vector<int> missing;  // ascending
  std::vector<std::pair<int, const TracedCollective*>> present;
  std::map<int, int64_t> late;  // missing instance -> how long after the first it entered
};

Attendance attendance(const std::vector<InstanceTrace>& traces, const std::string& group) {
  const int n = static_cast<int>(traces.size());
  // Members: every instance when the group spans the job with ranks = instance indexes (the
  // world), else the instances that recorded a collective of it.
  bool world = false;
  for (const auto& t : traces) {
    const TracedCollective* c = latestIn(t, group);
    if (c != nullptr && c->size == n && c->rank == t.instance) world = true;
  }
  uint64_t latest = 0;  // the furthest position any member reached
  for (const auto& t : traces) {
    if (const TracedCollective* c = latestIn(t, group)) latest = std::max(latest, position(*c));
  }
  Attendance a;
  for (const auto& t : traces) {
    const TracedCollective* c = latestIn(t, group);
    if (c == nullptr && !world) continue;
    if (c == nullptr || position(*c) < latest) {
      a.missing.push_back(t.instance);
    } else {
      a.present.emplace_back(t.instance, c);
    }
  }
  // An instance that entered only at the end of the others' wait, or after one of them had given
  // up (timed out), was not there in time: e.g. a stopped instance that mpirun resumed (SIGCONT)
  // while ending the job. "The end": the last tenth of the wait (the clock is coarse).
  std::optional<int64_t> gaveUp;
  int64_t firstStart = 0;
  for (const auto& [i, c] : a.present) {
    if (c->state == trace::State::Failed && c->failure == trace::Failure::Timeout) {
      gaveUp = gaveUp ? std::min(*gaveUp, c->endNs) : c->endNs;
    }
    firstStart = firstStart == 0 ? c->startNs : std::min(firstStart, c->startNs);
  }
  if (gaveUp) {
    const int64_t threshold = *gaveUp - (*gaveUp - firstStart) / 10;
    std::erase_if(a.present, [&](const auto& p) {
      if (p.second->startNs < threshold) return false;
      a.missing.push_back(p.first);
      a.late[p.first] = p.second->startNs - firstStart;
      return true;
    });
    std::sort(a.missing.begin(), a.missing.end());
  }
  return a;
}

// A mismatch: the members present called different collectives (or sizes). Nullopt when they
// agree.
std::optional<std::string> mismatchVerdict(const Attendance& a, const std::string& group) {
  auto signature = [](const TracedCollective* c) { return c->op + "/" + std::to_string(c->bytes); };
  std::map<std::string, std::vector<int>> bySignature;
  for (const auto& [i, c] : a.present) bySignature[signature(c)].push_back(i);
  if (bySignature.size() <= 1) return std::nullopt;
  // The majority (ties: the lowest instance's) is "right"; the rest are named.
  const std::vector<int>* major = nullptr;
  for (const auto& [sig, ids] : bySignature) {
    if (major == nullptr || ids.size() > major->size() ||
        (ids.size() == major->size() && ids.front() < major->front())) {
      major = &ids;
    }
  }
  const TracedCollective* ref = nullptr;
  std::vector<std::string> parts;
  for (const auto& [i, c] : a.present) {
    if (i == major->front()) ref = c;
  }
  const bool sameOp = std::all_of(a.present.begin(), a.present.end(),
                                  [&](const auto& p) { return p.second->op == ref->op; });
  auto what = [&](const TracedCollective* c) {
    return sameOp ? format("{} #{} of {}", c->op, c->seq, bytesText(c->bytes))
                  : format("{} #{}", c->op, c->seq);
  };
  for (const auto& [i, c] : a.present) {
    if (signature(c) == signature(ref)) continue;
    parts.push_back(format("instance {} is in {}", i, what(c)));
  }
  const std::string others =
      a.missing.empty() && major->size() > 1 ? "the others" : instanceList(*major);
  std::string text;
  for (size_t k = 0; k < parts.size(); ++k) text += (k ? ", " : "") + parts[k];
  text = format("{} on group {} while {} {} in {} (mismatch)", text, group, others,
                major->size() == 1 ? "is" : "are", what(ref));
  if (!a.missing.empty()) text += format("; {} entered neither", instanceList(a.missing));
  return text;
}

// Some members never entered the collective the others are in.
std::string missingVerdict(const Attendance& a, const std::vector<InstanceTrace>& traces,
                           const std::string& group, int64_t now) {
  const TracedCollective* ref = a.present.front().second;
  int64_t waited = 0;
  for (const auto& [i, c] : a.present) {
    waited = std::max(waited, (c->endNs != 0 ? c->endNs : now) - c->startNs);
  }
  std::string text = format("{} never entered {} (the others waited {})", instanceList(a.missing),
                            name(*ref), seconds(waited));
  for (int i : a.missing) {
    if (a.late.count(i)) {
      text += format("; instance {}: it entered {} only as the others gave up, {} after the first",
                     i, name(*ref), seconds(a.late.at(i)));
      if (stopped(traces[static_cast<size_t>(i)])) text += " (it is stopped)";
      continue;
    }
    text +=
        format("; instance {}: {}", i, whereInstead(traces[static_cast<size_t>(i)], group, now));
  }
  return text;
}

// Everyone is in the same collective.
std::string allInsideVerdict(const Attendance& a, const std::vector<InstanceTrace>& traces,
                             int64_t now) {
  const TracedCollective* ref = a.present.front().second;
  std::vector<int> done, notDone, stoppedInside;
  int64_t longest = 0;
  for (const auto& [i, c] : a.present) {
    (c->state == trace::State::Finished ? done : notDone).push_back(i);
    if (c->state != trace::State::Finished) {
      longest = std::max(longest, (c->endNs != 0 ? c->endNs : now) - c->startNs);
      if (stopped(traces[static_cast<size_t>(i)])) stoppedInside.push_back(i);
    }
  }
  std::string text;
  if (!stoppedInside.empty()) {
    text = format("{} {} stopped (SIGSTOP or a debugger) inside {}; ", instanceList(stoppedInside),
                  stoppedInside.size() == 1 ? "is" : "are", name(*ref));
  }
  if (done.empty()) {
    return text + format(
                      "every instance entered {} (for {}) and none finished it: none is "
                      "missing, so the transport itself is stuck or very slow",
                      name(*ref), seconds(longest));
  }
  return text + format("every instance entered {}; {} finished it, {} did not (for {})", name(*ref),
                       instanceList(done), instanceList(notDone), seconds(longest));
}

}  // namespace

std::string hangVerdict(const std::vector<InstanceTrace>& traces, int64_t now) {
  // The group to look at: that of the unfinished collective that started first (the longest wait).
  const TracedCollective* focus = nullptr;
  for (const auto& t : traces) {
    if (t.collectives.empty() || !unfinished(t.collectives.back())) continue;
    const TracedCollective& c = t.collectives.back();
    if (focus == nullptr || c.startNs < focus->startNs) focus = &c;
  }
  if (focus == nullptr) {
    if (!hasAnyCollective(traces)) return "no instance has recorded a collective";
    return "no instance is inside a collective: each finished the last one it entered (the job is "
           "busy or waiting elsewhere)";
  }
  const std::string group = focus->group;
  const Attendance a = attendance(traces, group);
  if (auto mismatch = mismatchVerdict(a, group)) return *mismatch;
  if (!a.missing.empty()) return missingVerdict(a, traces, group, now);
  return allInsideVerdict(a, traces, now);
}

std::vector<std::string> hangReport(const std::vector<InstanceTrace>& traces, int64_t nowNs,
                                    const std::string& why) {
  std::vector<std::string> lines;
  lines.push_back(format(
      "hang report ({}): the last collective each instance entered and the last it finished:",
      why));
  for (const auto& t : traces) lines.push_back("  " + instanceLine(t, nowNs));
  lines.push_back("verdict: " + hangVerdict(traces, nowNs));
  return lines;
}

}  // namespace xtrain::launcher
