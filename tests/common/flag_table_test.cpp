// The flag table (common/flag_table.hpp) and its value readers (common/flag_values.hpp): one row
// per flag gives parsing, defaults, usage rows and the agreement fingerprint, and every refusal is
// in the words the table was given.
#include "common/flag_table.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "common/flag_values.hpp"

namespace xtrain::flags {
namespace {

struct Opts {
  int64_t count{};
  std::optional<double> rate;
  std::string mode;
  std::string path;
  bool fast = false;
  bool help = false;
  std::vector<int> sizes;
  std::string seen;
};

FlagTable<Opts> makeTable(Syntax syntax = {}) {
  FlagTable<Opts> t(std::move(syntax), UsageLayout{.indent = 2, .column = 20, .width = 60});
  t.value("--count", "N", &Opts::count, integer<int64_t>(1, 100))
      .byDefault("7")
      .agree()
      .help("how many ({default})");
  t.value("--rate", "X", &Opts::rate, number()).agree().help("a rate\nover two lines");
  t.value("--mode", "M", &Opts::mode, word({"a", "b", "c"}, "{flag} is {choices-or}, not {text}"))
      .byDefault("a")
      .help("the mode");
  t.value("--path", "P", &Opts::path, nonEmpty()).agree([](const Opts& o) {
    return o.path.empty() ? "(none)" : "(given)";
  });
  t.toggle("--fast", &Opts::fast).agree().help("go fast");
  t.value("--size", "S", &Opts::sizes, integer<int>(0, 9)).help("a size (repeatable)");
  t.value("--a-rather-long-flag-name", "VALUE", &Opts::mode, text()).help("short help");
  t.value("--another-rather-long-flag", "VALUE", &Opts::mode, text())
      .help("help too long to share the flags' line");
  t.custom("--seen", "W", [](Opts& o, const Given& g) { o.seen = g.flag + "=" + g.text; });
  t.toggle("-h", &Opts::help).alias("--help").lenient().help("this text");
  return t;
}

std::string refusal(const FlagTable<Opts>& t, const std::vector<std::string>& args) {
  try {
    t.parse(args);
  } catch (const FlagError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FlagTable, AppliesDefaultsThenFlagsInOrder) {
  const auto t = makeTable();
  const Opts d = t.parse({});
  EXPECT_EQ(d.count, 7);
  EXPECT_EQ(d.mode, "a");
  EXPECT_FALSE(d.rate);
  const Opts o = t.parse({"--count", "3", "--count=4", "--rate", "0.5", "--fast", "--size", "1",
                          "--size=2", "--mode", "c", "--seen", "x"});
  EXPECT_EQ(o.count, 4);  // the last one wins
  EXPECT_EQ(o.rate, 0.5);
  EXPECT_TRUE(o.fast);
  EXPECT_EQ(o.sizes, (std::vector<int>{1, 2}));
  EXPECT_EQ(o.mode, "c");
  EXPECT_EQ(o.seen, "--seen=x");
  EXPECT_TRUE(t.parse({"--help=yes"}).help);  // lenient
  EXPECT_TRUE(t.parse({"-h"}).help);
}

TEST(FlagTable, RefusesInTheToolsWords) {
  const auto t = makeTable({.unknown = "unknown option '{arg}'{hint} (see tool --help)",
                            .needsValue = "option {flag} needs a value",
                            .takesNoValue = "option {flag} takes no value, got '{arg}'"});
  EXPECT_EQ(refusal(t, {"--xyz=3"}), "unknown option '--xyz=3' (see tool --help)");
  EXPECT_EQ(refusal(t, {"--count-it"}),
            "unknown option '--count-it' (did you mean --count?) (see tool --help)");
  EXPECT_EQ(refusal(t, {"bare"}), "unknown option 'bare' (see tool --help)");
  EXPECT_EQ(refusal(t, {"--count"}), "option --count needs a value");
  EXPECT_EQ(refusal(t, {"--fast=no"}), "option --fast takes no value, got '--fast=no'");
  EXPECT_EQ(refusal(t, {"--count", "0"}), "--count must be at least 1, got 0");
  EXPECT_EQ(refusal(t, {"--count", "101"}), "--count must be at most 100, got 101");
  for (const char* bad : {"", "x", "1.5", "+3", " 3", "3 ", "0x10", "99999999999999999999"}) {
    EXPECT_EQ(refusal(t, {"--count", bad}),
              std::string("--count expects an integer, got '") + bad + "'");
  }
  EXPECT_EQ(refusal(t, {"--mode", "d"}), "--mode is a, b or c, not d");
  EXPECT_EQ(refusal(t, {"--path="}), "--path needs a path, got an empty one");
  EXPECT_EQ(refusal(t, {"--size", "-1"}), "--size must be at least 0, got -1");
}

TEST(FlagTable, ProgramArgumentsFollowTheFlags) {
  FlagTable<Opts> t(Syntax{.shortInline = true, .programFollows = true});
  t.value("-n", "N", &Opts::count, integer<int64_t>(1, 9)).alias("--num");
  std::vector<std::string> rest;
  EXPECT_EQ(t.parse({"-n4", "prog", "-n", "5"}, &rest).count, 4);
  EXPECT_EQ(rest, (std::vector<std::string>{"prog", "-n", "5"}));
  EXPECT_EQ(t.parse({"--num=3", "--", "-n"}, &rest).count, 3);
  EXPECT_EQ(rest, std::vector<std::string>{"-n"});
}

TEST(FlagTable, PositionalArgumentsMayStandAnywhere) {
  FlagTable<Opts> t(Syntax{.unknown = "cmd: unknown option '{arg}'",
                           .inlineValues = false,
                           .positionalsAnywhere = true});
  t.toggle("--fast", &Opts::fast);
  std::vector<std::string> rest;
  EXPECT_TRUE(t.parse({"a", "--fast", "-", "", "b"}, &rest).fast);
  EXPECT_EQ(rest, (std::vector<std::string>{"a", "-", "", "b"}));
  EXPECT_EQ(refusal(t, {"a", "--fast=1"}), "cmd: unknown option '--fast=1'");
  EXPECT_EQ(refusal(t, {"--"}), "cmd: unknown option '--'");
}

TEST(FlagTable, FingerprintListsTheFlagsThatMustAgree) {
  const auto t = makeTable();
  const Fingerprint f = t.fingerprint(t.parse({"--rate", "0.25", "--path", "/x"}));
  const Fingerprint expected{
      {"--count", "7"}, {"--rate", "0.25"}, {"--path", "(given)"}, {"--fast", "off"}};
  EXPECT_EQ(f, expected);
  EXPECT_EQ(t.fingerprint(t.parse({}))[1].second, "-");
  // A repeatable flag has no single value: what the instances compare must be described.
  FlagTable<Opts> bad(Syntax{});
  EXPECT_THROW(bad.value("--size", "S", &Opts::sizes, integer<int>(0, 9)).agree(), internal_error);
}

TEST(FlagTable, UsageRowsAlignTheHelp) {
  const std::string expected =
      "  --count N         how many (7)\n"
      "  --rate X          a rate\n"
      "                    over two lines\n"
      "  --mode M          the mode\n"
      "  --fast            go fast\n"
      "  --size S          a size (repeatable)\n"
      "  --a-rather-long-flag-name VALUE   short help\n"
      "  --another-rather-long-flag VALUE\n"
      "                    help too long to share the flags' line\n"
      "  -h, --help        this text\n";
  EXPECT_EQ(makeTable().usage(), expected);
}

TEST(FlagValues, NumbersAreReadWholeAndWithinRange) {
  EXPECT_EQ(number()("--x", "1e3"), 1000.0);
  EXPECT_EQ(number<float>()("--x", " 0.5"), 0.5f);
  EXPECT_THROW(number()("--x", "1e999"), FlagError);
  EXPECT_THROW(number()("--x", "0.5s"), FlagError);
  const auto seconds = number(NumberWords{.notNumber = "{flag}: '{text}' is no number",
                                          .finiteAtLeast = 0.0,
                                          .outOfRange = "{flag}: '{text}' is out of range"});
  EXPECT_EQ(seconds("--t", "2"), 2.0);
  try {
    seconds("--t", "-1");
    FAIL();
  } catch (const FlagError& e) {
    EXPECT_STREQ(e.what(), "--t: '-1' is out of range");
  }
  EXPECT_THROW(seconds("--t", "inf"), FlagError);
}

TEST(FlagValues, CountsDurationsAndBytes) {
  EXPECT_EQ(scaledCount()("--b", "64K"), 64u << 10);
  EXPECT_EQ(scaledCount()("--b", "2g"), uint64_t{2} << 30);
  try {
    scaledCount()("--b", "1e3");
    FAIL();
  } catch (const FlagError& e) {
    EXPECT_STREQ(e.what(), "--b expects a count like 4096, 64K or 256M, got '1e3'");
  }
  EXPECT_THROW(scaledCount()("--b", "99999999999999999999"), FlagError);
  EXPECT_THROW(scaledCount(10)("--b", "11"), FlagError);
  EXPECT_EQ(duration()("--timeout", "200ms"), 0.2);
  EXPECT_THROW(duration()("--timeout", "0"), FlagError);
  EXPECT_EQ(duration(DurationRange{true})("--delay", "0"), 0.0);
  EXPECT_EQ(byteCount()("--bytes", "2KiB"), 2048u);
  EXPECT_THROW(byteCount()("--bytes", "2K"), FlagError);
}

TEST(FlagValues, PlaceholdersLeaveOtherBracesAlone) {
  EXPECT_EQ(fillPlaceholders("{a} {b} {} {c", {{"a", "1"}, {"b", "{a}"}}), "1 {a} {} {c");
}

}  // namespace
}  // namespace xtrain::flags
