// JsonOut: the few JSON pieces a trace file is made of, written with async-signal-safe calls only
// (no allocation, no locale, no stdio): the timeline's SIGINT handler writes a whole trace with
// it. Output goes through a caller's buffer, either to a file descriptor (flushed with write(2)
// when full) or kept in the buffer (cut, NUL-terminated, when it does not fit).
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>

namespace xtrain::timeline {

class JsonOut {
 public:
  // To `fd`, through `buffer`.
  JsonOut(int fd, char* buffer, size_t size) : fd_(fd), buf_(buffer), size_(size) {}
  // Into `buffer` only (c_str()); `size` >= 1.
  JsonOut(char* buffer, size_t size) : fd_(-1), buf_(buffer), size_(size) { buf_[0] = '\0'; }

  void put(char c);
  void str(const char* text);
  void integer(int64_t value);
  // Nanoseconds as microseconds with three decimals ("-12.345"), as trace events count time.
  void micros(int64_t ns);
  // A JSON string of at most `max` bytes of `text` (up to its NUL): quotes, backslashes and
  // control characters escaped, bytes that are not valid UTF-8 written as '?'.
  void quoted(const char* text, size_t max = SIZE_MAX);

  // Writes what is buffered; false (errno set) when a write failed, now or earlier.
  bool finish();
  // The text so far (buffer mode).
  const char* c_str() const { return buf_; }

 private:
  void flush();

  int fd_;
  char* buf_;
  size_t size_;
  size_t used_ = 0;
  bool failed_ = false;
  int errno_ = 0;
};

}  // namespace xtrain::timeline

#pragma GCC visibility pop
