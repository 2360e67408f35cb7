#include "launcher/output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "xtrain/format.hpp"

namespace xtrain::launcher {

void LineSplitter::feed(std::string_view bytes, std::vector<std::string>& lines) {
  while (!bytes.empty()) {
    auto nl = bytes.find('\n');
    std::string_view chunk = nl == std::string_view::npos ? bytes : bytes.substr(0, nl);
    size_t room = maxLine_ - pending_.size();
    if (chunk.size() > room) {
      // Too long: hand back a full piece and go on with the rest of the line.
      pending_.append(chunk.substr(0, room));
      lines.push_back(std::move(pending_));
      pending_.clear();
      bytes.remove_prefix(room);
      continue;
    }
    pending_.append(chunk);
    if (nl == std::string_view::npos) return;
    lines.push_back(std::move(pending_));
    pending_.clear();
    bytes.remove_prefix(nl + 1);
  }
}

std::optional<std::string> LineSplitter::finish() {
  if (pending_.empty()) return std::nullopt;
  std::string rest = std::move(pending_);
  pending_.clear();
  return rest;
}

std::string tagFor(TagFormat format, int instance, Stream stream) {
  if (format == TagFormat::Mpi) {
    return xtrain::format("[1,{}]{}", instance,
                          stream == Stream::Stdout ? "<stdout>:" : "<stderr>:");
  }
  return xtrain::format("[{}] ", instance);
}

bool isErrorLine(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* const words[] = {"error", "fatal",     "exception",          "abort",
                                      "panic", "traceback", "segmentation fault", "terminate",
                                      "killed"};
  for (const char* w : words) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return line.find(" E: ") != std::string_view::npos || line.find(" C: ") != std::string_view::npos;
}

bool shouldPrint(const OutputPolicy& policy, int instance, Stream stream, std::string_view line) {
  if (!policy.onlyInstance || *policy.onlyInstance == instance) return true;
  return stream == Stream::Stderr && isErrorLine(line);
}

std::string renderLine(const OutputPolicy& policy, int instance, Stream stream,
                       std::string_view line) {
  std::string out;
  if (policy.tag) out = tagFor(policy.format, instance, stream);
  out.append(line);
  out.push_back('\n');
  return out;
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void LineTail::push(std::string line) {
  if (capacity_ == 0) return;
  if (lines_.size() == capacity_) lines_.pop_front();
  lines_.push_back(std::move(line));
}

namespace {

// Reads decimal digits at `pos` (at most 9); advances pos.
std::optional<int> readIndex(std::string_view s, size_t& pos) {
  size_t start = pos;
  int value = 0;
  while (pos < s.size() && pos - start < 9 && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    value = value * 10 + (s[pos] - '0');
    ++pos;
  }
  if (pos == start) return std::nullopt;
  return value;
}

bool consume(std::string_view s, size_t& pos, std::string_view what) {
  if (s.substr(pos, what.size()) != what) return false;
  pos += what.size();
  return true;
}

}  // namespace

namespace {
// The length of an mpirun tag "[J,R]<name>:" at the start of `s` (R in `rank`), or 0.
size_t mpirunTagAt(std::string_view s, int& rank) {
  size_t pos = 0;
  if (!consume(s, pos, "[") || !readIndex(s, pos) || !consume(s, pos, ",")) return 0;
  auto r = readIndex(s, pos);
  if (!r || !consume(s, pos, "]<")) return 0;
  size_t close = s.find(">:", pos);
  if (close == std::string_view::npos || close - pos > 8) return 0;
  for (size_t k = pos; k < close; ++k) {
    if (!std::islower(static_cast<unsigned char>(s[k]))) return 0;
  }
  rank = *r;
  return close + 2;
}
}  // namespace

void MpirunLineJoiner::feed(std::string_view line, std::vector<Line>& out) {
  int rank = 0;
  size_t tagLen = mpirunTagAt(line, rank);
  if (tagLen == 0) {
    out.push_back(Line{std::nullopt, {}, std::string(line)});
    return;
  }
  // Chunks: each runs from its tag to the next tag, or to the end of the line (its newline).
  while (tagLen > 0) {
    std::string tag(line.substr(0, tagLen));
    line.remove_prefix(tagLen);
    size_t next = 0;
    int nextRank = 0;
    size_t nextLen = 0;
    for (size_t at = line.find('['); at != std::string_view::npos; at = line.find('[', at + 1)) {
      nextLen = mpirunTagAt(line.substr(at), nextRank);
      if (nextLen > 0) {
        next = at;
        break;
      }
    }
    std::string_view chunk = nextLen > 0 ? line.substr(0, next) : line;
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [&](const Pending& p) { return p.instance == rank && p.tag == tag; });
    if (nextLen > 0) {
      // A piece without its newline yet.
      if (it == pending_.end()) {
        pending_.push_back(Pending{rank, tag, std::string(chunk)});
      } else {
        it->text.append(chunk);
      }
      line.remove_prefix(next);
    } else {
      std::string text;
      if (it != pending_.end()) {
        text = std::move(it->text);
        pending_.erase(it);
      }
      text.append(chunk);
      out.push_back(Line{rank, tag, std::move(text)});
    }
    rank = nextRank;
    tagLen = nextLen;
  }
}

void MpirunLineJoiner::finish(std::vector<Line>& out) {
  for (auto& p : pending_) out.push_back(Line{p.instance, std::move(p.tag), std::move(p.text)});
  pending_.clear();
}

std::optional<TaggedLine> parseEngineLine(EngineTag tag, std::string_view line) {
  size_t pos = 0;
  if (tag == EngineTag::Mpirun) {
    // [J,R]<stdout>:text
    if (!consume(line, pos, "[") || !readIndex(line, pos) || !consume(line, pos, ",")) {
      return std::nullopt;
    }
    auto rank = readIndex(line, pos);
    if (!rank || !consume(line, pos, "]<")) return std::nullopt;
    size_t close = line.find(">:", pos);
    if (close == std::string_view::npos || close - pos > 8) return std::nullopt;
    return TaggedLine{*rank, line.substr(close + 2)};
  }
  // srun --label: "%*d: text"
  while (pos < line.size() && line[pos] == ' ') ++pos;
  auto task = readIndex(line, pos);
  if (!task || !consume(line, pos, ": ")) {
    // An empty line of a task: "0:" with nothing after it.
    if (task && pos == line.size() - 1 && line.back() == ':') return TaggedLine{*task, {}};
    return std::nullopt;
  }
  return TaggedLine{*task, line.substr(pos)};
}

std::optional<int> instanceBlamedBy(EngineTag tag, std::string_view line) {
  if (tag == EngineTag::Mpirun) {
    size_t at = line.find("Process name: [[");
    if (at != std::string_view::npos) {
      size_t pos = line.find("],", at);
      if (pos == std::string_view::npos) return std::nullopt;
      pos += 2;
      return readIndex(line, pos);
    }
    at = line.find("process rank ");
    if (at != std::string_view::npos) {
      size_t pos = at + 13;
      return readIndex(line, pos);
    }
    return std::nullopt;
  }
  if (line.substr(0, 13) != "srun: error: ") return std::nullopt;
  size_t at = line.find(": task ");
  if (at == std::string_view::npos) return std::nullopt;
  size_t pos = at + 7;
  auto task = readIndex(line, pos);
  if (!task || !consume(line, pos, ":")) return std::nullopt;
  return task;
}

}  // namespace xtrain::launcher
