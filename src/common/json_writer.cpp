#include "common/json_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>

#include "xtrain/error.hpp"

namespace xtrain::json {

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

template <typename T>
void writeFinite(Sink& out, T value, Reals format) {
  if (!std::isfinite(value)) {
    out.append("null");
    return;
  }
  char text[64];
  // chars_format::general with a precision is printf's %g with that precision ("%.9g"); without
  // one, the shortest text that reads back as the same T.
  const auto r = format == Reals::Digits9
                     ? std::to_chars(text, text + sizeof text, static_cast<double>(value),
                                     std::chars_format::general, 9)
                     : std::to_chars(text, text + sizeof text, value);
  out.append(std::string_view(text, static_cast<size_t>(r.ptr - text)));
}

template <typename T>
void writeWhole(Sink& out, T value) {
  char text[24];
  const auto r = std::to_chars(text, text + sizeof text, value);
  out.append(std::string_view(text, static_cast<size_t>(r.ptr - text)));
}

}  // namespace

void Sink::append(std::string_view text) {
  if (str_ != nullptr) {
    str_->append(text);
    return;
  }
  for (const char c : text) put(c);
}

void Sink::flush() {
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

bool Sink::finish() {
  flush();
  if (failed_) errno = errno_ != 0 ? errno_ : EIO;
  return !failed_;
}

void writeInteger(Sink& out, int64_t value) {
  writeWhole(out, value);
}
void writeInteger(Sink& out, uint64_t value) {
  writeWhole(out, value);
}
void writeReal(Sink& out, double value, Reals format) {
  writeFinite(out, value, format);
}
void writeReal(Sink& out, float value, Reals format) {
  writeFinite(out, value, format);
}

void writeMicros(Sink& out, int64_t ns) {
  if (ns < 0) {
    out.put('-');
    // -INT64_MIN overflows: such a time is nonsense anyway.
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  writeWhole(out, ns / 1000);
  out.put('.');
  const int64_t frac = ns % 1000;
  out.put(static_cast<char>('0' + frac / 100));
  out.put(static_cast<char>('0' + frac / 10 % 10));
  out.put(static_cast<char>('0' + frac % 10));
}

void writeQuoted(Sink& out, std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  out.put('"');
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t len = text.size();
  for (size_t i = 0; i < len;) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out.put('\\');
      out.put(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c == '\t') {
        out.append("\\t");
      } else {
        out.append("\\u00");
        out.put(kHex[c >> 4]);
        out.put(kHex[c & 0xF]);
      }
      ++i;
    } else {
      const size_t n = utf8Length(p + i, len - i);
      if (n == 0) {
        out.put('?');
        ++i;
      } else {
        out.append(std::string_view(text.data() + i, n));
        i += n;
      }
    }
  }
  out.put('"');
}

void Writer::separate() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (depth_ == 0) {
    if (hasRoot_) misused_ = true;  // "{}{}" or "1 2": one document holds one value
    hasRoot_ = true;
    return;
  }
  const uint64_t bit = uint64_t{1} << (depth_ - 1);
  // A value in an object must follow its key (key() separates instead).
  if ((isObject_ & bit) != 0) misused_ = true;
  if ((hasMember_ & bit) != 0) {
    out_.put(',');
    if ((linePerMember_ & bit) != 0) out_.put('\n');
  }
  hasMember_ |= bit;
}

Writer& Writer::open(char bracket, bool linePerMember) {
  separate();
  if (depth_ == kMaxDepth) {
    misused_ = true;
    return *this;
  }
  out_.put(bracket);
  if (linePerMember) out_.put('\n');
  const uint64_t bit = uint64_t{1} << depth_++;
  hasMember_ &= ~bit;
  linePerMember_ = linePerMember ? linePerMember_ | bit : linePerMember_ & ~bit;
  isObject_ = bracket == '{' ? isObject_ | bit : isObject_ & ~bit;
  return *this;
}

Writer& Writer::close(char bracket) {
  const uint64_t bit = depth_ > 0 ? uint64_t{1} << (depth_ - 1) : 0;
  if (depth_ == 0 || afterKey_ || ((isObject_ & bit) != 0) != (bracket == '}')) {
    misused_ = true;
    return *this;
  }
  if ((linePerMember_ & bit) != 0) out_.put('\n');
  out_.put(bracket);
  --depth_;
  return *this;
}

Writer& Writer::beginObject() {
  return open('{', false);
}
Writer& Writer::endObject() {
  return close('}');
}
Writer& Writer::beginArray(Layout layout) {
  return open('[', layout == Layout::LinePerMember);
}
Writer& Writer::endArray() {
  return close(']');
}

Writer& Writer::key(std::string_view name) {
  const uint64_t bit = depth_ > 0 ? uint64_t{1} << (depth_ - 1) : 0;
  if (depth_ == 0 || afterKey_ || (isObject_ & bit) == 0) misused_ = true;
  afterKey_ = false;
  if (depth_ > 0) {
    if ((hasMember_ & bit) != 0) out_.put(',');
    hasMember_ |= bit;
  }
  writeQuoted(out_, name);
  out_.put(':');
  afterKey_ = true;
  return *this;
}

Writer& Writer::value(std::string_view s) {
  separate();
  writeQuoted(out_, s);
  return *this;
}

Writer& Writer::value(bool b) {
  separate();
  out_.append(b ? "true" : "false");
  return *this;
}

Writer& Writer::value(int64_t n) {
  separate();
  writeInteger(out_, n);
  return *this;
}

Writer& Writer::value(uint64_t n) {
  separate();
  writeInteger(out_, n);
  return *this;
}

Writer& Writer::value(double d) {
  separate();
  writeReal(out_, d, reals_);
  return *this;
}

Writer& Writer::value(float f) {
  separate();
  writeReal(out_, f, reals_);
  return *this;
}

Writer& Writer::null() {
  separate();
  out_.append("null");
  return *this;
}

Writer& Writer::micros(int64_t ns) {
  separate();
  writeMicros(out_, ns);
  return *this;
}

Writer& Writer::raw(std::string_view text) {
  separate();
  out_.append(text);
  return *this;
}

std::string StringWriter::str() const {
  if (!complete()) {
    throw internal_error("json::StringWriter: {} container(s) left open{}", openContainers(),
                         misused() ? ", begin/end/key calls out of order" : "");
  }
  return text;
}

}  // namespace xtrain::json
