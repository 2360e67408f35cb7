// xtrain's one JSON writer: every JSON file or string xtrain writes (the session's reports
// getReport and getSerializedGraph, `xtrain --metrics` lines, the timeline's traces and xrun's
// merge of them) goes through this file, the one place that escapes strings and formats numbers.
//
// Why not nlohmann-json (a dependency of src/common, which xtrain uses to read JSON):
//  - the timeline writes a whole trace from its SIGINT handler: that needs a writer that allocates
//    nothing and calls nothing but write(2). nlohmann builds a document in memory first;
//  - the files keep their bytes: reports print doubles as printf's "%.9g", metrics the shortest
//    text of the value's own type (a float learning rate 0.01 is 0.01). nlohmann holds every number
//    as a double and prints it with its own shortest-double algorithm (0.009999999776482582), with
//    no way to choose per file;
//  - nlohmann's dump() throws on a string that is not UTF-8 (a user's tensor name can be anything);
//  - a metrics line or a trace is written in the order of its fields, as it streams.
// So this is a small streaming writer: Sink (where bytes go), the number and string formatters,
// and Writer (objects, arrays, keys and the commas between).
//
// Strings (writeQuoted, the one escaping function): '"' and '\' get a backslash, newline, carriage
// return and tab are written \n, \r and \t, the other control characters (below 0x20) \u00xx
// (lowercase hex); everything else is copied, except bytes that are not part of valid UTF-8
// (a stray continuation byte, a cut sequence, an overlong form, a surrogate, past U+10FFFF), which
// are written '?' each: the output is always valid UTF-8 JSON and writing never fails on a string.
//
// Numbers: integers in full (int64 and uint64); reals in one of the Reals formats below; a real
// that is NaN or infinite is written null (JSON has no NaN or Infinity; the reports and metrics
// always did this). No locale is ever consulted (std::to_chars).
//
// Async-signal-safety: a Sink on a file descriptor or a fixed buffer, the formatters and Writer
// allocate nothing, take no lock and call only write(2); the std::string Sink allocates.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xtrain::json {

// Where the text goes.
class Sink {
 public:
  // Appended to `out` (allocates).
  explicit Sink(std::string& out) : str_(&out) {}
  // To `fd` through `buffer`, written with write(2) when the buffer is full and by finish().
  Sink(int fd, char* buffer, size_t size) : fd_(fd), buf_(buffer), size_(size) {}
  // Into `buffer` only (c_str()), cut when it does not fit; `size` >= 1.
  Sink(char* buffer, size_t size) : buf_(buffer), size_(size) { buf_[0] = '\0'; }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void put(char c) {
    if (str_ != nullptr) {
      str_->push_back(c);
    } else if (fd_ >= 0) {
      if (used_ == size_) flush();
      buf_[used_++] = c;
    } else if (used_ + 1 < size_) {
      buf_[used_++] = c;
      buf_[used_] = '\0';
    }
  }
  void append(std::string_view text);

  // Writes what a file descriptor's buffer holds; false (errno set) when a write failed, now or
  // earlier. True in the other modes.
  bool finish();
  // The text so far (fixed-buffer mode).
  const char* c_str() const { return buf_; }

 private:
  void flush();

  std::string* str_ = nullptr;
  int fd_ = -1;
  char* buf_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
  bool failed_ = false;
  int errno_ = 0;
};

// How reals are written.
enum class Reals {
  // printf's "%.9g" of the value as a double (getReport, getSerializedGraph): 1.0 / 3 ->
  // 0.333333333, a float 0.01 -> 0.00999999978, 1e21 -> 1e+21, -0.0 -> -0, 5e-324 ->
  // 4.94065646e-324.
  Digits9,
  // The fewest digits that read back as the same value of its own type (std::to_chars): a float
  // 0.01 -> 0.01, a double 0.1 -> 0.1, 1e21 -> 1e+21, -0.0 -> -0 (--metrics).
  Shortest,
};

// The formatters, each writing one JSON value.
void writeInteger(Sink& out, int64_t value);
void writeInteger(Sink& out, uint64_t value);
void writeReal(Sink& out, double value, Reals format);
void writeReal(Sink& out, float value, Reals format);
// Nanoseconds as microseconds with three decimals (1234567 -> 1234.567, -5 -> -0.005), as trace
// events count time; INT64_MIN is written as -INT64_MAX.
void writeMicros(Sink& out, int64_t ns);
// `text` as a JSON string (see the top of this file).
void writeQuoted(Sink& out, std::string_view text);

// Objects and arrays with their commas. The caller nests begin/end calls correctly; a misuse (an
// end without a begin, a key outside an object, more than kMaxDepth levels) is not thrown from
// here (a signal handler may be writing) but makes complete() false.
class Writer {
 public:
  // How an array lays out its members.
  enum class Layout {
    Compact,  // [1,2]
    // "[\n1,\n2\n]" (empty: "[\n\n]"): one member a line (a trace's events, read line by line)
    LinePerMember,
  };
  static constexpr int kMaxDepth = 64;

  explicit Writer(Sink& out, Reals reals = Reals::Digits9) : out_(out), reals_(reals) {}

  Writer& beginObject();
  Writer& endObject();
  Writer& beginArray(Layout layout = Layout::Compact);
  Writer& endArray();
  // The next member's name (inside an object); a value or begin* follows.
  Writer& key(std::string_view name);

  Writer& value(std::string_view s);
  Writer& value(const char* s) { return value(std::string_view(s)); }
  Writer& value(const std::string& s) { return value(std::string_view(s)); }
  Writer& value(bool b);
  Writer& value(int64_t n);
  Writer& value(uint64_t n);
  Writer& value(int n) { return value(static_cast<int64_t>(n)); }
  // In the writer's Reals format; a float in Digits9 is written as the double it converts to.
  Writer& value(double d);
  Writer& value(float f);
  Writer& null();
  // writeMicros as a value.
  Writer& micros(int64_t ns);
  // `text` as it is: a value that is JSON already (an event of a trace part being merged).
  Writer& raw(std::string_view text);

  // key(name).value(v) in one call.
  template <typename T>
  Writer& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

  // Every object and array closed and no misuse.
  bool complete() const { return depth_ == 0 && !afterKey_ && !misused_; }
  int openContainers() const { return depth_; }
  bool misused() const { return misused_; }

 private:
  // Writes the comma (and line break) before a value or key when one is due.
  void separate();
  Writer& open(char bracket, bool linePerMember);
  Writer& close(char bracket);

  Sink& out_;
  Reals reals_;
  int depth_ = 0;
  // Per open container (bit = depth - 1): whether it has a member yet, whether it is one member a
  // line, whether it is an object.
  uint64_t hasMember_ = 0;
  uint64_t linePerMember_ = 0;
  uint64_t isObject_ = 0;
  bool afterKey_ = false;
  bool misused_ = false;
  bool hasRoot_ = false;  // a top-level value was begun: a second one is misuse (not JSON)
};

namespace detail {
// StringWriter's string and sink, a base so that they are made before its Writer.
struct StringSink {
  std::string text;
  Sink sink{text};
};
}  // namespace detail

// A document written into a string (the reports): str() is the text, and an internal_error when
// it is not complete().
class StringWriter : private detail::StringSink, public Writer {
 public:
  explicit StringWriter(Reals reals = Reals::Digits9) : Writer(sink, reals) {}
  std::string str() const;
};

}  // namespace xtrain::json

#pragma GCC visibility pop
