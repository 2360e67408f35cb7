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

// How an engine tags the lines of its instances: mpirun --tag-output "[1,i]<stdout>:" (also
// <stderr>, <stddiag>), srun --label "i: " (the index right-aligned, so maybe spaces before it).
enum class EngineTag { Mpirun, Srun };

struct TaggedLine {
  int instance = 0;
  std::string_view text;  // after the tag
};

// The instance and the text of a line the engine tagged; nullopt for the engine's own messages.
std::optional<TaggedLine> parseEngineLine(EngineTag tag, std::string_view line);

// Reassembles mpirun's tagged output into whole lines. mpirun tags every chunk it forwards, not
// every line: a line an instance writes in pieces arrives as "[1,2]<stderr>:abc[1,2]<stderr>:def",
// and a piece of another instance may come between. Fed the lines of one of mpirun's streams (split
// on '\n'), it hands back each instance's complete lines, and mpirun's own (untagged) lines as they
// come.
class MpirunLineJoiner {
 public:
  struct Line {
    std::optional<int> instance;  // nullopt: mpirun's own line
    std::string tag;              // "[1,2]<stderr>:" as mpirun wrote it; empty for its own lines
    std::string text;
  };
  void feed(std::string_view line, std::vector<Line>& out);
  // At the end of the stream: the pieces still waiting for their newline, as lines.
  void finish(std::vector<Line>& out);

 private:
  struct Pending {
    int instance;
    std::string tag;
    std::string text;
  };
  std::vector<Pending> pending_;  // in order of arrival
};

// The instance an engine's own failure report names, if this line is such a report: mpirun's
// "Process name: [[J,1],R]" or "process rank R ...", srun's "srun: error: HOST: task R: ...".
std::optional<int> instanceBlamedBy(EngineTag tag, std::string_view line);

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
