#include "common/timeline_merge.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/json_writer.hpp"
#include "common/output_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain::timeline {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNotePrefix = "timeline-";
// How a part begins (timeline.cpp, writeJson), and the merged trace too.
constexpr std::string_view kHeader = "{\"otherData\":{\"xtrainOriginRealtimeNs\":";

// One part as the timeline wrote it (timeline.cpp, writeJson): a header line with the clock's
// origin, one event per line, "]}" last.
struct Part {
  int64_t originNs = 0;
  int64_t dropped = 0;
  std::vector<std::string> events;
};

std::optional<int64_t> numberAfter(const std::string& line, std::string_view key) {
  const auto at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + key.size();
  bool negative = false;
  if (i < line.size() && line[i] == '-') {
    negative = true;
    ++i;
  }
  int64_t v = 0;
  const size_t begin = i;
  // At most 18 digits and then one more while it fits: CLOCK_REALTIME in ns has 19.
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') {
    const int d = line[i++] - '0';
    if (v > (INT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  if (i == begin) return std::nullopt;
  return negative ? -v : v;
}

std::optional<Part> readPart(const std::string& path, std::string& problem) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    problem = "no part file " + path + " (the instance ended before writing it: killed?)";
    return std::nullopt;
  }
  std::string line;
  Part part;
  if (!std::getline(in, line) || line.rfind(kHeader, 0) != 0) {
    problem = "the part file " + path + " is not a trace part written by xtrain";
    return std::nullopt;
  }
  part.originNs = numberAfter(line, kHeader).value_or(0);
  part.dropped = numberAfter(line, "\"droppedEvents\":").value_or(0);
  bool closed = false;
  while (std::getline(in, line)) {
    if (line == "]}") {
      closed = true;
      break;
    }
    if (!line.empty() && line.back() == ',') line.pop_back();
    if (line.empty() || line.front() != '{' || line.back() != '}') {
      problem = "the part file " + path + " has a malformed line";
      return std::nullopt;
    }
    part.events.push_back(std::move(line));
  }
  if (!closed) {
    problem = "the part file " + path + " is cut short";
    return std::nullopt;
  }
  return part;
}

// Rewrites the event's "ts" (microseconds, three decimals) `shiftNs` later.
std::string shifted(const std::string& event, int64_t shiftNs) {
  static constexpr std::string_view kTs = ",\"ts\":";
  if (shiftNs == 0 || event.rfind("{\"ph\":\"X\"", 0) != 0) return event;
  const auto at = event.find(kTs);
  if (at == std::string::npos) return event;
  size_t i = at + kTs.size();
  const size_t begin = i;
  bool negative = false;
  if (event[i] == '-') {
    negative = true;
    ++i;
  }
  int64_t whole = 0, frac = 0;
  while (i < event.size() && event[i] >= '0' && event[i] <= '9')
    whole = whole * 10 + (event[i++] - '0');
  if (i < event.size() && event[i] == '.') {
    ++i;
    int digits = 0;
    while (i < event.size() && event[i] >= '0' && event[i] <= '9') {
      if (digits++ < 3) frac = frac * 10 + (event[i] - '0');
      ++i;
    }
    while (digits++ < 3) frac *= 10;
  }
  int64_t ns = whole * 1000 + frac;
  if (negative) ns = -ns;
  std::string text = event.substr(0, begin);
  json::Sink out(text);
  json::writeMicros(out, ns + shiftNs);
  return text + event.substr(i);
}

}  // namespace

std::string partPath(const std::string& path, int instance) {
  return path + ".instance-" + std::to_string(instance);
}

void registerPart(const std::string& rendezvousDir, int instance, const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  const std::string note =
      (fs::path(rendezvousDir) / (kNotePrefix + std::to_string(instance))).string();
  try {
    replaceOwnFile(note, (ec ? path : absolute.string()) + "\n", "the trace's note for xrun");
  } catch (const error& e) {
    throw runtime_error("{}",
                        e.what());  // a fault while running, as a trace that cannot be written
  }
}

MergeOutcome mergeParts(const std::string& path,
                        const std::vector<std::pair<int, std::string>>& parts) {
  MergeOutcome outcome;
  outcome.path = path;
  std::vector<std::pair<std::string, Part>> read;  // part path, content
  for (const auto& [instance, partFile] : parts) {
    std::string problem;
    if (auto part = readPart(partFile, problem)) {
      read.emplace_back(partFile, std::move(*part));
    } else {
      outcome.problems.push_back("instance " + std::to_string(instance) + ": " + problem);
    }
  }
  if (read.empty()) return outcome;
  int64_t origin = read.front().second.originNs;
  int64_t dropped = 0;
  for (const auto& [file, part] : read) {
    origin = std::min(origin, part.originNs);
    dropped += part.dropped;
  }
  std::string text;
  json::Sink out(text);
  json::Writer w(out);
  w.beginObject()
      .key("otherData")
      .beginObject()
      .field("xtrainOriginRealtimeNs", origin)
      .field("instances", static_cast<uint64_t>(read.size()))
      .field("droppedEvents", dropped)
      .endObject()
      .field("displayTimeUnit", "ms")
      .key("traceEvents")
      .beginArray(json::Writer::Layout::LinePerMember);
  for (const auto& [file, part] : read) {
    for (const auto& event : part.events) w.raw(shifted(event, part.originNs - origin));
  }
  w.endArray().endObject();
  out.put('\n');
  try {
    writeOutputFile(path, text, "the merged trace");
  } catch (const std::exception& e) {
    outcome.problems.push_back(e.what());
    return outcome;
  }
  outcome.written = true;
  outcome.merged = static_cast<int>(read.size());
  for (const auto& [file, part] : read) {
    std::error_code ec;
    fs::remove(file, ec);
  }
  return outcome;
}

std::vector<MergeOutcome> mergeRegisteredParts(const std::string& rendezvousDir) {
  std::map<std::string, std::vector<std::pair<int, std::string>>> byFile;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(rendezvousDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kNotePrefix, 0) != 0) continue;
    const std::string index = name.substr(std::strlen(kNotePrefix));
    if (index.empty() || index.size() > 9 ||
        !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    std::ifstream in(entry.path());
    std::string file;
    if (!std::getline(in, file) || file.empty()) continue;
    const int instance = std::stoi(index);
    byFile[file].emplace_back(instance, partPath(file, instance));
  }
  std::vector<MergeOutcome> outcomes;
  for (auto& [file, parts] : byFile) {
    std::sort(parts.begin(), parts.end());
    outcomes.push_back(mergeParts(file, parts));
  }
  return outcomes;
}

}  // namespace xtrain::timeline
