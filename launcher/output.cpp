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

}  // namespace xtrain::launcher
