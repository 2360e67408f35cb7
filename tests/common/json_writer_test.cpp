// json::Writer (src/common/json_writer.hpp) against the code it replaced, each old formatter
// copied here as the reference: the session's report writer (session::JsonWriter: printf "%.9g"),
// `xtrain --metrics` (std::to_chars of the value's own type) and the timeline's JsonOut (traces).
// All three were deleted when json_writer.hpp took their place (issue 28).
#include "common/json_writer.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::testing {
namespace {

using nlohmann::json;
using xtrain::json::Reals;
using xtrain::json::Sink;
using xtrain::json::StringWriter;
using xtrain::json::Writer;

// ---- The old formatters, as they were --------------------------------------------------------

// session::JsonWriter::value(double).
std::string oldReportReal(double d) {
  if (!std::isfinite(d)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

// metrics_file.cpp's appendNumber.
template <typename T>
std::string oldMetricsNumber(T v) {
  if (!std::isfinite(v)) return "null";
  char text[64];
  const auto r = std::to_chars(text, text + sizeof text, v);
  return std::string(text, r.ptr);
}

// session::JsonWriter::quoted.
std::string oldReportQuoted(std::string_view s) {
  std::string q = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': q += "\\\""; break;
      case '\\': q += "\\\\"; break;
      case '\n': q += "\\n"; break;
      case '\r': q += "\\r"; break;
      case '\t': q += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          q += buf;
        } else {
          q += c;
        }
    }
  }
  q += '"';
  return q;
}

// timeline::JsonOut: utf8Length, quoted, integer and micros.
size_t oldUtf8Length(const unsigned char* p, size_t left) {
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
  if (c == 0xE0 && p[1] < 0xA0) return 0;
  if (c == 0xED && p[1] > 0x9F) return 0;
  if (c == 0xF0 && p[1] < 0x90) return 0;
  if (c == 0xF4 && p[1] > 0x8F) return 0;
  return n;
}

std::string oldTraceQuoted(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  const size_t len = std::strlen(s.c_str());  // it stopped at a NUL
  const auto* p = reinterpret_cast<const unsigned char*>(s.c_str());
  for (size_t i = 0; i < len;) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else {
      const size_t n = oldUtf8Length(p + i, len - i);
      if (n == 0) {
        out += '?';
        ++i;
      } else {
        out.append(s, i, n);
        i += n;
      }
    }
  }
  return out + '"';
}

std::string oldTraceInteger(int64_t value) {
  char digits[24];
  int n = 0;
  const bool negative = value < 0;
  do {
    const int64_t d = value % 10;
    digits[n++] = static_cast<char>('0' + (negative ? -d : d));
    value /= 10;
  } while (value != 0);
  std::string out = negative ? "-" : "";
  while (n > 0) out += digits[--n];
  return out;
}

std::string oldTraceMicros(int64_t ns) {
  std::string out;
  if (ns < 0) {
    out += '-';
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  out += oldTraceInteger(ns / 1000);
  out += '.';
  const int64_t frac = ns % 1000;
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
  return out;
}

// ---- The new ones, into a string ---------------------------------------------------------------

template <typename T>
std::string real(T v, Reals format) {
  std::string s;
  Sink out(s);
  xtrain::json::writeReal(out, v, format);
  return s;
}

std::string newQuoted(std::string_view text) {
  std::string s;
  Sink out(s);
  xtrain::json::writeQuoted(out, text);
  return s;
}

template <typename T>
std::string integer(T v) {
  std::string s;
  Sink out(s);
  xtrain::json::writeInteger(out, v);
  return s;
}

std::string micros(int64_t ns) {
  std::string s;
  Sink out(s);
  xtrain::json::writeMicros(out, ns);
  return s;
}

// Doubles worth checking: zeros, denormals, the limits, integers around 2^53 and 2^64, values at
// the edges of %g's switch to exponents, NaNs and infinities, and the random bit patterns `more`.
std::vector<double> edgeDoubles(size_t more) {
  using L = std::numeric_limits<double>;
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.1,
                           0.5,
                           1.0 / 3,
                           2.0 / 3,
                           1e-5,
                           1e-4,
                           9.99999999e-5,
                           123456789.0,
                           1234567890.0,
                           999999999.0,
                           999999999.5,
                           1e9,
                           1e21,
                           1e22,
                           1e300,
                           -1e300,
                           9007199254740992.0,
                           9007199254740993.0,
                           18446744073709551615.0,
                           -9223372036854775808.0,
                           L::min(),
                           -L::min(),
                           L::denorm_min(),
                           -L::denorm_min(),
                           2.2250738585072009e-308,
                           L::max(),
                           -L::max(),
                           L::lowest(),
                           L::epsilon(),
                           L::infinity(),
                           -L::infinity(),
                           L::quiet_NaN(),
                           -L::quiet_NaN(),
                           L::signaling_NaN(),
                           0.01f,
                           1e-3f,
                           3.4028235e38f};
  std::mt19937_64 rng(28);
  for (size_t i = 0; i < more; ++i) v.push_back(std::bit_cast<double>(rng()));
  // Short decimals and integers, as losses and times are.
  for (size_t i = 0; i < more / 4; ++i) {
    v.push_back(static_cast<double>(rng() % 100000) / 1000);
    v.push_back(static_cast<double>(static_cast<int64_t>(rng()) >> (rng() % 64)));
  }
  return v;
}

std::vector<float> edgeFloats(size_t more) {
  using L = std::numeric_limits<float>;
  std::vector<float> v = {0.0f,           -0.0f,           1.0f,        0.01f,       0.1f,
                          1e-3f,          3.0e-4f,         128.0f,      65504.0f,    L::min(),
                          -L::min(),      L::denorm_min(), L::max(),    L::lowest(), L::infinity(),
                          -L::infinity(), L::quiet_NaN(),  16777216.0f, 16777217.0f, 1e20f};
  std::mt19937 rng(28);
  for (size_t i = 0; i < more; ++i) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  return v;
}

// ---- Numbers -----------------------------------------------------------------------------------

TEST(JsonNumbers, Digits9IsTheReportsPrintfFormat) {
  for (const double d : edgeDoubles(200000)) {
    ASSERT_EQ(real(d, Reals::Digits9), oldReportReal(d)) << std::hexfloat << d;
  }
  // A float in Digits9 is the double it converts to, as the report's value(double) took it.
  for (const float f : edgeFloats(100000)) {
    ASSERT_EQ(real(f, Reals::Digits9), oldReportReal(static_cast<double>(f))) << std::hexfloat << f;
  }
  EXPECT_EQ(real(0.1, Reals::Digits9), "0.1");
  EXPECT_EQ(real(1.0 / 3, Reals::Digits9), "0.333333333");
  EXPECT_EQ(real(1e21, Reals::Digits9), "1e+21");
  EXPECT_EQ(real(-0.0, Reals::Digits9), "-0");
  EXPECT_EQ(real(5e-324, Reals::Digits9), "4.94065646e-324");
  EXPECT_EQ(real(123456789012.0, Reals::Digits9), "1.23456789e+11");
  EXPECT_EQ(real(0.01f, Reals::Digits9), "0.00999999978");
}

TEST(JsonNumbers, ShortestIsTheMetricsFormat) {
  for (const double d : edgeDoubles(200000)) {
    ASSERT_EQ(real(d, Reals::Shortest), oldMetricsNumber(d)) << std::hexfloat << d;
  }
  for (const float f : edgeFloats(200000)) {
    ASSERT_EQ(real(f, Reals::Shortest), oldMetricsNumber(f)) << std::hexfloat << f;
  }
  EXPECT_EQ(real(0.01f, Reals::Shortest), "0.01");
  EXPECT_EQ(real(0.1, Reals::Shortest), "0.1");
  EXPECT_EQ(real(-0.0, Reals::Shortest), "-0");
  EXPECT_EQ(real(1e21, Reals::Shortest), "1e+21");
  EXPECT_EQ(real(5e-324, Reals::Shortest), "5e-324");
  EXPECT_EQ(real(std::numeric_limits<float>::denorm_min(), Reals::Shortest), "1e-45");
}

// NaN and the infinities are null in both formats, as both old writers wrote them.
TEST(JsonNumbers, NonFiniteIsNull) {
  for (const Reals format : {Reals::Digits9, Reals::Shortest}) {
    for (const double d : {std::nan(""), -std::nan(""), HUGE_VAL, -HUGE_VAL}) {
      EXPECT_EQ(real(d, format), "null");
      EXPECT_EQ(real(static_cast<float>(d), format), "null");
    }
  }
}

// Every number either format writes is JSON, and reads back: exactly in Shortest, to 9 digits in
// Digits9.
TEST(JsonNumbers, ReadBackAsJson) {
  for (const double d : edgeDoubles(20000)) {
    if (!std::isfinite(d)) continue;
    const json shortest = json::parse(real(d, Reals::Shortest));
    ASSERT_TRUE(shortest.is_number()) << d;
    EXPECT_EQ(shortest.get<double>(), d);
    const double back = json::parse(real(d, Reals::Digits9)).get<double>();
    EXPECT_LE(std::abs(back - d), std::abs(d) * 1e-8) << std::hexfloat << d;
  }
}

TEST(JsonNumbers, IntegersAndMicrosecondsAsTheTraceWroteThem) {
  std::vector<int64_t> values = {
      0,    1,     -1,      9,  10,        -10,       999,           -999,
      1000, -1000, 1234567, -5, INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 999};
  std::mt19937_64 rng(9);
  for (int i = 0; i < 100000; ++i) {
    values.push_back(static_cast<int64_t>(rng()) >> (rng() % 64));
  }
  for (const int64_t v : values) {
    ASSERT_EQ(integer(v), oldTraceInteger(v));
    ASSERT_EQ(integer(v), std::to_string(v));  // the report's value(int64_t)
    ASSERT_EQ(micros(v), oldTraceMicros(v)) << v;
  }
  EXPECT_EQ(integer(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(micros(1234567), "1234.567");
  EXPECT_EQ(micros(-5), "-0.005");
  EXPECT_EQ(micros(INT64_MIN), "-9223372036854775.807");
}

// ---- Strings -----------------------------------------------------------------------------------

// Strings with quotes, backslashes, every control character, non-ASCII text and invalid UTF-8;
// then random byte strings drawn mostly from those bytes.
std::vector<std::string> testStrings() {
  std::vector<std::string> v = {"",
                                "plain",
                                "a \"quoted\" \\ name\n\x01",
                                "tab\there\r\n",
                                "\x7f"
                                " del",
                                "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",  // é € 😀
                                "\xff",
                                "caf\xc3",                // cut sequence
                                "\xc0\xaf",               // overlong '/'
                                "\xe0\x80\xaf",           // overlong
                                "\xed\xa0\x80",           // a surrogate
                                "\xf4\x90\x80\x80",       // past U+10FFFF
                                "\x80\xbf continuation",  // stray continuation bytes
                                "\xf0\x9f\x98",           // 4-byte sequence cut
                                "x\xe2\x82y",             // a sequence broken by ASCII
                                std::string("nul\0inside", 10)};
  for (int c = 0; c < 256; ++c) {
    v.push_back(std::string(1, static_cast<char>(c)));
    // Appended piecewise: GCC 12 reports a false -Wrestrict for "<" + std::string(...) + ">".
    std::string framed = "<";
    framed += static_cast<char>(c);
    framed += '>';
    v.push_back(framed);
  }
  const std::string alphabet =
      std::string("aZ \"\\/\n\r\t\b\f\x01\x1f\x7f", 14) +
      "\x80\xbf\xc0\xc2\xc3\xa9\xdf\xe0\xe2\xed\xa0\xef\xf0\xf4\x8f\x90\xf5\xff";
  std::mt19937 rng(5);
  for (int i = 0; i < 50000; ++i) {
    std::string s(rng() % 12, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    v.push_back(s);
  }
  return v;
}

// Whether `s` is valid UTF-8, by nlohmann's strict parser reading the old report's quoting of it
// (which copied every byte at or above 0x20).
bool validUtf8(const std::string& s) {
  try {
    const json parsed = json::parse(oldReportQuoted(s));
    return parsed.is_string();
  } catch (const json::parse_error&) {
    return false;
  }
}

TEST(JsonStrings, ValidUtf8IsQuotedAsTheReportsQuotedIt) {
  int valid = 0;
  for (const std::string& s : testStrings()) {
    if (!validUtf8(s)) continue;
    ++valid;
    ASSERT_EQ(newQuoted(s), oldReportQuoted(s)) << json(s).dump();
    ASSERT_EQ(json::parse(newQuoted(s)).get<std::string>(), s);
  }
  EXPECT_GT(valid, 5000);
}

// The trace's quoting, but for newline, carriage return and tab, which are now \n, \r and \t (the
// trace wrote \u000a, \u000d and \u0009: the same string to any JSON reader).
TEST(JsonStrings, TraceTextIsQuotedAsTheTraceQuotedIt) {
  int compared = 0;
  for (const std::string& s : testStrings()) {
    if (s.find_first_of(std::string("\n\r\t\0", 4)) != std::string::npos) continue;
    ++compared;
    ASSERT_EQ(newQuoted(s), oldTraceQuoted(s))
        << json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  EXPECT_GT(compared, 10000);
  EXPECT_EQ(newQuoted("a\nb\rc\td"), "\"a\\nb\\rc\\td\"");
  EXPECT_EQ(newQuoted("\b\f\x1f"), "\"\\u0008\\u000c\\u001f\"");
  EXPECT_EQ(newQuoted(std::string("\0", 1)), "\"\\u0000\"");
}

// Bytes that are not UTF-8 become '?' each (the report copied them, writing JSON that no reader
// accepts; the trace wrote '?'): the output is always JSON.
TEST(JsonStrings, InvalidUtf8BecomesQuestionMarks) {
  EXPECT_EQ(newQuoted("\xff"), "\"?\"");
  EXPECT_EQ(newQuoted("caf\xc3"), "\"caf?\"");
  EXPECT_EQ(newQuoted("\xed\xa0\x80"), "\"???\"");
  EXPECT_EQ(newQuoted("x\xe2\x82y"), "\"x??y\"");
  EXPECT_EQ(newQuoted("caf\xc3\xa9\xff"), "\"caf\xc3\xa9?\"");
  for (const std::string& s : testStrings()) {
    const std::string q = newQuoted(s);
    ASSERT_NO_THROW({
      const json parsed = json::parse(q);
      ASSERT_TRUE(parsed.is_string());
    }) << q;
  }
}

// ---- Structure ---------------------------------------------------------------------------------

TEST(JsonWriter, EscapesStringsAndNestsContainers) {
  StringWriter w;
  w.beginObject()
      .field("name", std::string("a \"quoted\" \\ name\n\x01"))
      .key("list")
      .beginArray()
      .value(int64_t{-3})
      .value(uint64_t{18446744073709551615ull})
      .value(0.5)
      .value(std::numeric_limits<double>::infinity())
      .value(true)
      .beginObject()
      .endObject()
      .null()
      .endArray()
      .endObject();
  EXPECT_EQ(w.str(),
            "{\"name\":\"a \\\"quoted\\\" \\\\ name\\n\\u0001\",\"list\":[-3,18446744073709551615,"
            "0.5,null,true,{},null]}");
  const json j = json::parse(w.str());
  EXPECT_EQ(j["name"], "a \"quoted\" \\ name\n\x01");
  EXPECT_EQ(j["list"][1].get<uint64_t>(), 18446744073709551615ull);
}

TEST(JsonWriter, RealsInTheWritersFormat) {
  StringWriter report;
  report.beginArray().value(1.0 / 3).value(0.01f).value(-0.0).endArray();
  EXPECT_EQ(report.str(), "[0.333333333,0.00999999978,-0]");
  StringWriter metrics(Reals::Shortest);
  metrics.beginArray().value(1.0 / 3).value(0.01f).value(-0.0).endArray();
  EXPECT_EQ(metrics.str(), "[0.3333333333333333,0.01,-0]");
}

TEST(JsonWriter, LinePerMemberArraysAndRawValues) {
  StringWriter w;
  w.beginObject().key("events").beginArray(Writer::Layout::LinePerMember);
  w.raw("{\"a\":1}").beginObject().field("ts", 0).key("d").micros(1500).endObject();
  w.endArray().key("none").beginArray(Writer::Layout::LinePerMember).endArray().endObject();
  EXPECT_EQ(w.str(), "{\"events\":[\n{\"a\":1},\n{\"ts\":0,\"d\":1.500}\n],\"none\":[\n\n]}");
}

TEST(JsonWriter, MisuseIsAnInternalErrorOfTheDocument) {
  const auto misused = [](auto&& write) {
    StringWriter w;
    write(w);
    EXPECT_FALSE(w.complete());
    EXPECT_THROW((void)w.str(), internal_error);
  };
  misused([](Writer& w) { w.beginArray(); });
  misused([](Writer& w) { w.beginObject().key("k"); });
  misused([](Writer& w) { w.endObject(); });
  misused([](Writer& w) { w.beginArray().endObject(); });
  misused([](Writer& w) { w.beginArray().key("k").value(1).endArray(); });
  misused([](Writer& w) { w.beginObject().value(1).endObject(); });
  misused([](Writer& w) { w.beginObject().endObject().beginObject().endObject(); });  // {}{}
  misused([](Writer& w) { w.value(int64_t{1}).value(int64_t{2}); });
  misused([](Writer& w) {
    for (int i = 0; i <= Writer::kMaxDepth; ++i) w.beginArray();
    for (int i = 0; i <= Writer::kMaxDepth; ++i) w.endArray();
  });
  StringWriter deep;
  for (int i = 0; i < Writer::kMaxDepth; ++i) deep.beginArray();
  for (int i = 0; i < Writer::kMaxDepth; ++i) deep.endArray();
  EXPECT_EQ(deep.str(), std::string(64, '[') + std::string(64, ']'));
}

// ---- Sinks -------------------------------------------------------------------------------------

TEST(JsonSink, FileDescriptorThroughASmallBuffer) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  char buffer[3];
  Sink out(fds[1], buffer, sizeof buffer);
  Writer w(out);
  w.beginObject().field("name", "caf\xc3\xa9").field("n", int64_t{-12}).endObject();
  ASSERT_TRUE(out.finish());
  ::close(fds[1]);
  std::string text;
  char chunk[64];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;)
    text.append(chunk, static_cast<size_t>(n));
  ::close(fds[0]);
  EXPECT_EQ(text, "{\"name\":\"caf\xc3\xa9\",\"n\":-12}");
}

TEST(JsonSink, AFailedWriteIsReportedByFinish) {
  char buffer[4];
  Sink cut(buffer, sizeof buffer);
  cut.append("abcdef");
  EXPECT_STREQ(cut.c_str(), "abc");  // cut, NUL-terminated
  EXPECT_TRUE(cut.finish());
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // not writable
  ASSERT_GE(fd, 0);
  Sink bad(fd, buffer, sizeof buffer);
  bad.append("abcdef");
  errno = 0;
  EXPECT_FALSE(bad.finish());
  EXPECT_EQ(errno, EBADF);
  ::close(fd);
}

}  // namespace
}  // namespace xtrain::testing
