// Output handling: splitting instance output into lines, tagging them, choosing what to print.
//
// Single-threaded by design: xrun's supervisor reads every pipe in one poll() loop and writes each
// tagged line with one write() (writeAll loops only on a short write), so lines from different
// instances never mix within a line.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/options.hpp"

namespace xtrain::launcher {

enum class Stream { Stdout, Stderr };

// Accumulates bytes and hands back complete lines (without the '\n'). A line longer than maxLine is
// handed back in maxLine pieces so a runaway writer cannot exhaust memory.
class LineSplitter {
 public:
  explicit LineSplitter(size_t maxLine = 1 << 20) : maxLine_(maxLine) {}
  // Appends complete lines to `lines`.
  void feed(std::string_view bytes, std::vector<std::string>& lines);
  // The unterminated rest, if any (at end of stream).
  std::optional<std::string> finish();

 private:
  size_t maxLine_;
  std::string pending_;
};

// "[3] " or "[1,3]<stdout>:" / "[1,3]<stderr>:".
std::string tagFor(TagFormat format, int instance, Stream stream);

// Whether a stderr line reports an error: it mentions error/fatal/exception/abort/panic/traceback/
// segmentation fault/terminate (any case), or is an xtrain log line at level E or C (" E: ", " C:
// ").
bool isErrorLine(std::string_view line);

struct OutputPolicy {
  bool tag = true;
  TagFormat format = TagFormat::Xrun;
  std::optional<int> onlyInstance;
};

// Whether xrun prints this line on its own stdout/stderr (per-instance files always get every
// line).
bool shouldPrint(const OutputPolicy& policy, int instance, Stream stream, std::string_view line);

// The text printed for a line: tag (when tagging) + line + '\n'.
std::string renderLine(const OutputPolicy& policy, int instance, Stream stream,
                       std::string_view line);

// Writes everything, retrying on EINTR and short writes. Returns false on a write error (e.g.
// EPIPE).
bool writeAll(int fd, std::string_view bytes);

// The last `capacity` lines seen, for the root-cause message.
class LineTail {
 public:
  explicit LineTail(size_t capacity = 3) : capacity_(capacity) {}
  void push(std::string line);
  const std::deque<std::string>& lines() const { return lines_; }

 private:
  size_t capacity_;
  std::deque<std::string> lines_;
};

}  // namespace xtrain::launcher
