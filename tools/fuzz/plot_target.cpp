// The plot target: a trace or metrics file as xtrain writes them, damaged, fed to scripts/plot-trace
// or scripts/plot-metrics. Besides the byte-level mutations of the other file targets (which mostly
// break the JSON), most cases keep the JSON whole and put one hostile value where a number, string
// or key was: the inputs that get past a parser and reach the code that uses the values. The
// scripts must draw the file (exit 0) or refuse it (exit 2, one line): never a traceback, a hang or
// any other ending.
#include <sys/stat.h>

#include <algorithm>

#include "boundary.hpp"
#include "mutation.hpp"
#include "targets.hpp"

namespace xfuzz {

namespace {

// A JSON token of the file that one value may replace: a scalar value or an object key.
struct Token {
  size_t begin = 0, end = 0;
  bool key = false;
  std::string of;  // a value: the key it is the value of ("" in a list or at the top)
};

size_t skipSpace(const std::string& s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// The scalar tokens of a JSON text (strings, numbers, true/false/null), each marked as a key when a
// ':' follows it. A light scan, not a parser: the file is xtrain's own, whole JSON.
std::vector<Token> scalarTokens(const std::string& s) {
  std::vector<Token> out;
  std::string lastKey;  // the key before the current value
  bool afterColon = false;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '"') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
      const size_t next = skipSpace(s, j);
      const bool key = next < s.size() && s[next] == ':';
      out.push_back({i, j, key, key || !afterColon ? "" : lastKey});
      if (key) lastKey = s.substr(i, j - i);
      afterColon = false;
      i = j;
    } else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
      size_t j = i;
      while (j < s.size() && std::string_view(",]}: \t\r\n").find(s[j]) == std::string_view::npos) ++j;
      out.push_back({i, j, false, afterColon ? lastKey : ""});
      afterColon = false;
      i = j;
    } else {
      if (c == ':') afterColon = true;
      else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') afterColon = false;
      ++i;
    }
  }
  return out;
}

const std::vector<std::string>& hostileValues() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> h;
    // The boundary set, as JSON numbers where it is one and as strings otherwise.
    for (const auto& b : boundaryValues()) {
      const bool number = !b.empty() && b.find_first_not_of("-0123456789.e") == std::string::npos;
      h.push_back(number ? b : "\"" + b + "\"");
    }
    const std::vector<std::string> more{
        std::string(400, '7'), "-" + std::string(400, '9'), std::string(5000, '1'),  // too long for a double, for Python
        "1e400", "-1e400", "1e308", "1e300", "-5", "-0.5", "1.5", "1e15", "1e16", "-1e-300",
        "NaN", "Infinity", "-Infinity",  // not JSON, but Python's json reads them
        "null", "true", "false", "{}", "{\"a\":{\"b\":[1,2]}}", "[]", "[1,2,3]", "\"\"", "\"X\"", "\"M\"",
        "\"step\"", "\"$\\\\frac{1}{$\"", "\"\\u0000\"", "\"\\ud800\"", "\"\\u00e9\\u4e2d\"", "\"" + hugeString() + "\"",
        std::string(20000, '[') + std::string(20000, ']'),  // nested deeper than Python reads
    };
    h.insert(h.end(), more.begin(), more.end());
    return h;
  }();
  return v;
}

// The keys the scripts read (so a key replaced by another makes a field go missing or appear twice).
const std::vector<std::string>& keyNames() {
  static const std::vector<std::string> v{
      "\"ts\"", "\"dur\"", "\"ph\"", "\"pid\"", "\"tid\"", "\"cat\"", "\"name\"", "\"args\"", "\"traceEvents\"",
      "\"step\"", "\"loss\"", "\"samples_per_s\"", "\"val_loss\"", "\"lr\"", "\"\"", "\"x\""};
  return v;
}

std::string abbreviated(const std::string& s) {
  return s.size() <= 40 ? s : s.substr(0, 20) + "...(" + std::to_string(s.size()) + " bytes)";
}

// Replaces one token of `bytes`; returns what was done. Most of the time the value of a field the
// scripts read (most tokens of a trace are in names and arguments that are only copied), now and
// then any token, a key included.
std::string replaceToken(std::string& bytes, Rng& rng) {
  const std::vector<Token> tokens = scalarTokens(bytes);
  if (tokens.empty()) return "no token to replace";
  std::vector<Token> read;
  for (const auto& t : tokens)
    if (!t.key && std::find(keyNames().begin(), keyNames().end(), t.of) != keyNames().end()) read.push_back(t);
  const Token& t = !read.empty() && rng.chance(3, 4) ? rng.pick(read) : rng.pick(tokens);
  const std::string with = t.key && rng.chance(2, 3) ? rng.pick(keyNames()) : rng.pick(hostileValues());
  const std::string was = bytes.substr(t.begin, t.end - t.begin);
  bytes.replace(t.begin, t.end - t.begin, with);
  return "replaced " + std::string(t.key ? "key " : "value ") + abbreviated(was) + " at byte " +
         std::to_string(t.begin) + " with " + abbreviated(with);
}

// Damages caseDir/rel: a hostile value in whole JSON (most cases), a byte mutation, a cut at a
// random place (a torn line), or the file replaced by nothing, junk, a directory or a FIFO.
std::string damage(const fs::path& caseDir, const std::string& rel, Rng& rng) {
  const fs::path path = caseDir / rel;
  std::string bytes = readFile(path);
  const uint64_t r = rng.below(20);
  if (r < 12) {
    std::string what = replaceToken(bytes, rng);
    if (rng.chance(1, 4)) what += "; " + replaceToken(bytes, rng);
    writeFile(path, bytes);
    return rel + ": " + what;
  }
  if (r < 16) {
    const uint64_t size = bytes.size();
    Mutation m = Mutation::draw(rng, size);
    m.apply(bytes);
    writeFile(path, bytes);
    return rel + ": " + m.describe(size);
  }
  if (r < 18) {  // cut anywhere, mostly inside the last line
    const size_t lastLine = bytes.rfind('\n', bytes.size() >= 2 ? bytes.size() - 2 : 0);
    const size_t from = rng.chance(2, 3) && lastLine != std::string::npos ? lastLine + 1 : 0;
    const size_t at = from + rng.below(bytes.size() - from);
    bytes.resize(at);
    writeFile(path, bytes);
    return rel + ": cut at byte " + std::to_string(at);
  }
  fs::remove(path);
  switch (rng.below(4)) {
    case 0:
      writeFile(path, "");
      return rel + ": emptied";
    case 1: {
      std::string junk(1 + rng.below(4096), '\0');
      for (auto& c : junk) c = static_cast<char>(rng.below(256));
      writeFile(path, junk);
      return rel + ": replaced by " + std::to_string(junk.size()) + " random bytes";
    }
    case 2:
      fs::create_directory(path);
      return rel + ": replaced by a directory";
    default:
      mkfifo(path.c_str(), 0644);  // nobody writes it: a reader that opens it blocks forever
      return rel + ": replaced by a FIFO";
  }
}

std::string stepsValue(Rng& rng) {
  static const std::vector<std::string> good{"1:3", "2:3", "2:2", "3:3"};
  static const std::vector<std::string> odd{"0:1", "3:1", "5:9", "1", ":", "1:2:3", "-1:2", "a:b",
                                            "1:9223372036854775808", "1:" + std::string(400, '9')};
  return rng.chance(2, 3) ? rng.pick(good) : rng.pick(odd);
}

}  // namespace

Case makePlotCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  fs::copy_file(p.dir / "trace.json", caseDir / "trace.json");
  fs::copy_file(p.dir / "metrics.jsonl", caseDir / "metrics.jsonl");
  Case c;
  Command cmd;
  if (rng.chance(1, 2)) {
    c.mutation = damage(caseDir, "trace.json", rng);
    cmd.args = {"plot-trace", "trace.json", "out.png"};
    if (rng.chance(1, 3)) {
      cmd.args.push_back("--steps");
      cmd.args.push_back(stepsValue(rng));
    }
    if (rng.chance(1, 8)) {
      cmd.args.push_back("--width");
      cmd.args.push_back(rng.chance(1, 2) ? "3" : rng.pick(boundaryValues()));
    }
  } else {
    c.mutation = damage(caseDir, "metrics.jsonl", rng);
    cmd.args = {"plot-metrics", "metrics.jsonl"};
    if (rng.chance(2, 3)) {
      cmd.args.push_back("-o");
      cmd.args.push_back("out.png");
    }
  }
  // Drawn (0) or refused as bad input (2): any other exit code, a signal or a traceback is a defect.
  cmd.allowedExits = {0, 2};
  cmd.forbiddenOutput = {"Traceback (most recent call last)"};
  cmd.timeoutAtLeast = std::chrono::seconds(30);
  c.commands.push_back(std::move(cmd));
  return c;
}

}  // namespace xfuzz
