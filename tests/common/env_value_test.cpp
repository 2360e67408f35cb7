// The one reader of numbers, durations, words and strings (common/env_value.hpp): one syntax, one
// form of refusal, and no duration that overflows the clock (issue 27: XTRAIN_COMM_TIMEOUT=1e10 and
// XTRAIN_CHECKPOINT_TIMEOUT=inf expired at once, "timed out after -9223372036854775808 ms").
#include "common/env_value.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "testing/error_testing.hpp"
#include "testing/process_testing.hpp"

namespace xtrain {
namespace {

using std::chrono::milliseconds;
using testing::expectError;
using testing::ScopedEnv;

constexpr const char* kVar = "XTRAIN_TEST_ENV_VALUE";

TEST(WholeNumber, DecimalDigitsWithinTheRange) {
  EXPECT_EQ(parseWholeNumber("0", "x", 0, 10), 0);
  EXPECT_EQ(parseWholeNumber("10", "x", 0, 10), 10);
  EXPECT_EQ(parseWholeNumber("007", "x", 0, 10), 7);  // decimal, not octal
  EXPECT_EQ(parseWholeNumber("-3", "x", -5, 10), -3);
  EXPECT_EQ(parseWholeNumber("9223372036854775807", "x", 0, INT64_MAX), INT64_MAX);
}

TEST(WholeNumber, RefusesEverythingElseInOneForm) {
  for (const char* bad : {"", " 5", "5 ", "\t5", "+5", "0x10", "5.0", "1e3", "five", "-1", "-0",
                          "11", "99999999999999999999", "5abc", "inf", "nan"}) {
    expectError([&] { parseWholeNumber(bad, "XTRAIN_X", 0, 10); },
                {std::string("XTRAIN_X='") + bad + "': expected a whole number from 0 to 10"});
  }
  expectError([] { parseWholeNumber("0", "XTRAIN_X", 16, INT64_MAX); },
              {"XTRAIN_X='0': expected a whole number of at least 16"});
}

TEST(Duration, SecondsOrAUnit) {
  EXPECT_EQ(parseDurationSeconds("300", "x"), 300.0);
  EXPECT_EQ(parseDurationSeconds("0.5", "x"), 0.5);
  EXPECT_EQ(parseDurationSeconds("200ms", "x"), 0.2);
  EXPECT_EQ(parseDurationSeconds("30s", "x"), 30.0);
  EXPECT_EQ(parseDurationSeconds("5m", "x"), 300.0);
  EXPECT_EQ(parseDurationSeconds("2H", "x"), 7200.0);
  EXPECT_EQ(parseDurationSeconds("2592000", "x"), 2592000.0);  // the maximum, 30 days
  EXPECT_EQ(parseDurationSeconds("720h", "x"), 2592000.0);
  EXPECT_EQ(parseDurationSeconds("0", "x", DurationRange{true}), 0.0);
}

// The values of issue 27 and their kin: each refused naming the variable, the value and the range,
// none taken as a timeout that has already expired.
TEST(Duration, RefusesWhatOverflowsOrIsNotADuration) {
  for (const char* bad :
       {"1e10",    "1e16",        "inf",  "-inf",   "nan",
        "2592001", "2592000.001", "721h", "43201m", "99999999999999999999999999999999999999999",
        "",        " 5",          "5 ",   "5 s",    "+5",
        "-1",      "0",           "0ms",  "0x10",   ".5",
        "5.",      "1.2.3",       "5sec", "5 min",  "abc"}) {
    expectError([&] { parseDurationSeconds(bad, "XTRAIN_X"); },
                {std::string("XTRAIN_X='") + bad + "': expected a duration of more than 0",
                 "at most 2592000 s (30 days)"});
  }
  expectError(
      [] {
        parseDurationSeconds("3601", "--grace-period", {false, milliseconds(3600000)});
      },
      {"--grace-period='3601': expected a duration of more than 0 and at most 3600 s"});
  expectError([] { parseDurationSeconds("-1", "XTRAIN_X", DurationRange{true}); },
              {"XTRAIN_X='-1': expected a duration of 0 or more"});
}

TEST(Duration, ToMillisecondsNeverOverflowsNorRoundsToZero) {
  EXPECT_EQ(secondsToMilliseconds(0), milliseconds(0));
  EXPECT_EQ(secondsToMilliseconds(0.0001), milliseconds(1));
  EXPECT_EQ(secondsToMilliseconds(1.5), milliseconds(1500));
  EXPECT_EQ(secondsToMilliseconds(2592000), milliseconds(2592000000));
  // The longest duration still fits the clocks' nanoseconds once added to now.
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(kMaxDuration);
  EXPECT_GT(deadline, std::chrono::steady_clock::now());
  // Anything else is a caller's bug.
  EXPECT_THROW(secondsToMilliseconds(1e10), internal_error);
  EXPECT_THROW(secondsToMilliseconds(-1), internal_error);
}

TEST(EnvValue, UnsetOrEmptyIsTheDefault) {
  {
    ScopedEnv unset(kVar, nullptr);
    EXPECT_FALSE(readEnvString(kVar));
    EXPECT_FALSE(readEnvWholeNumber(kVar, 0, 5));
    EXPECT_FALSE(readEnvDuration(kVar));
    EXPECT_FALSE(readEnvChoice(kVar, {"a", "b"}));
  }
  ScopedEnv empty(kVar, "");
  EXPECT_FALSE(readEnvString(kVar));
  EXPECT_FALSE(readEnvWholeNumber(kVar, 0, 5));
  EXPECT_FALSE(readEnvDuration(kVar));
  EXPECT_FALSE(readEnvChoice(kVar, {"a", "b"}));
}

TEST(EnvValue, ReadsAndRefusesNamingTheVariable) {
  {
    ScopedEnv set(kVar, "4");
    EXPECT_EQ(readEnvWholeNumber(kVar, 0, 5), 4);
    EXPECT_EQ(readEnvDuration(kVar), milliseconds(4000));
    EXPECT_EQ(readEnvString(kVar), "4");
  }
  {
    ScopedEnv set(kVar, "1e10");
    expectError([] { readEnvDuration(kVar); },
                {std::string(kVar) + "='1e10': expected a duration", "at most 2592000 s"});
  }
  {
    ScopedEnv set(kVar, "b");
    EXPECT_EQ(readEnvChoice(kVar, {"a", "b"}), "b");
  }
  ScopedEnv set(kVar, " b");
  expectError(
      [] {
        readEnvChoice(kVar, {"a", "b", "c"});
      },
      {std::string(kVar) + "=' b': expected a, b, or c"});
}

}  // namespace
}  // namespace xtrain
