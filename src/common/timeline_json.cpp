#include "common/timeline_json.hpp"

#include <unistd.h>

#include <cerrno>

namespace xtrain::timeline {

namespace {

// The length of the valid UTF-8 sequence at `p` (at most `left` bytes), or 0.
size_t utf8Length(const unsigned char* p, size_t left) {
  const unsigned char c = p[0];
  size_t n = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (n > left) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
  }
  // Overlong forms, surrogates and code points past U+10FFFF.
  if (c == 0xE0 && p[1] < 0xA0) return 0;
  if (c == 0xED && p[1] > 0x9F) return 0;
  if (c == 0xF0 && p[1] < 0x90) return 0;
  if (c == 0xF4 && p[1] > 0x8F) return 0;
  return n;
}

}  // namespace

void JsonOut::flush() {
  if (fd_ < 0) return;
  size_t done = 0;
  while (done < used_ && !failed_) {
    const ssize_t n = ::write(fd_, buf_ + done, used_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = true;
      errno_ = errno;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  used_ = 0;
}

void JsonOut::put(char c) {
  if (fd_ < 0) {
    if (used_ + 1 < size_) {
      buf_[used_++] = c;
      buf_[used_] = '\0';
    }
    return;
  }
  if (used_ == size_) flush();
  buf_[used_++] = c;
}

void JsonOut::str(const char* text) {
  for (const char* p = text; *p != '\0'; ++p) put(*p);
}

void JsonOut::integer(int64_t value) {
  char digits[24];
  int n = 0;
  // Negative values counted as negative, so INT64_MIN does not overflow.
  const bool negative = value < 0;
  do {
    const int64_t d = value % 10;
    digits[n++] = static_cast<char>('0' + (negative ? -d : d));
    value /= 10;
  } while (value != 0);
  if (negative) put('-');
  while (n > 0) put(digits[--n]);
}

void JsonOut::micros(int64_t ns) {
  if (ns < 0) {
    put('-');
    // -INT64_MIN overflows: such a time is nonsense anyway.
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  integer(ns / 1000);
  put('.');
  const int64_t frac = ns % 1000;
  put(static_cast<char>('0' + frac / 100));
  put(static_cast<char>('0' + frac / 10 % 10));
  put(static_cast<char>('0' + frac % 10));
}

void JsonOut::quoted(const char* text, size_t max) {
  static const char kHex[] = "0123456789abcdef";
  put('"');
  size_t len = 0;
  while (len < max && text[len] != '\0') ++len;
  const auto* p = reinterpret_cast<const unsigned char*>(text);
  for (size_t i = 0; i < len;) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      put('\\');
      put(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      str("\\u00");
      put(kHex[c >> 4]);
      put(kHex[c & 0xF]);
      ++i;
    } else {
      const size_t n = utf8Length(p + i, len - i);
      if (n == 0) {
        put('?');
        ++i;
      } else {
        for (size_t k = 0; k < n; ++k) put(static_cast<char>(p[i + k]));
        i += n;
      }
    }
  }
  put('"');
}

bool JsonOut::finish() {
  flush();
  if (failed_) errno = errno_ != 0 ? errno_ : EIO;
  return !failed_;
}

}  // namespace xtrain::timeline
