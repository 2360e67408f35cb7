// The environment switches' one reader: booleans and byte counts, every value not understood
// refused naming the variable and the value.
#include "common/env_switch.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "testing/error_testing.hpp"
#include "testing/process_testing.hpp"

namespace xtrain {
namespace {

using testing::ScopedEnv;

constexpr const char* kVar = "XTRAIN_TEST_ENV_SWITCH";

TEST(EnvSwitch, UnsetOrEmptyIsTheDefault) {
  ScopedEnv unset(kVar, nullptr);
  EXPECT_TRUE(readBoolSwitch(kVar, true));
  EXPECT_FALSE(readBoolSwitch(kVar, false));
  ScopedEnv empty(kVar, "");
  EXPECT_TRUE(readBoolSwitch(kVar, true));
  EXPECT_FALSE(readBoolSwitch(kVar, false));
}

TEST(EnvSwitch, AcceptsTheSixSpellingsInAnyCase) {
  for (const char* on : {"1", "true", "on", "TRUE", "On"}) {
    ScopedEnv env(kVar, on);
    EXPECT_TRUE(readBoolSwitch(kVar, false)) << on;
  }
  for (const char* off : {"0", "false", "off", "FALSE", "Off"}) {
    ScopedEnv env(kVar, off);
    EXPECT_FALSE(readBoolSwitch(kVar, true)) << off;
  }
}

TEST(EnvSwitch, RefusesAnythingElseNamingVariableAndValue) {
  for (const char* bad : {"bogus", "yes", "2", " 1", "1 ", "-1", "o"}) {
    ScopedEnv env(kVar, bad);
    testing::expectError([] { readBoolSwitch(kVar, true); },
                         {std::string(kVar) + "='" + bad + "'", "0, 1, false, true, off or on"});
  }
}

TEST(ByteCount, DigitsWithAnOptionalBinaryUnit) {
  EXPECT_EQ(parseByteCount("0", "x"), 0u);
  EXPECT_EQ(parseByteCount("4096", "x"), 4096u);
  EXPECT_EQ(parseByteCount("12B", "x"), 12u);
  EXPECT_EQ(parseByteCount("3KiB", "x"), 3u << 10);
  EXPECT_EQ(parseByteCount("4MiB", "x"), 4u << 20);
  EXPECT_EQ(parseByteCount("2gib", "x"), uint64_t{2} << 30);
  EXPECT_EQ(parseByteCount("18446744073709551615", "x"), UINT64_MAX);
}

TEST(ByteCount, RefusesSignsSpacesFractionsAndOtherUnits) {
  for (const char* bad :
       {"", "-8", "+8", " 5", "5 ", "1.5MiB", "1G", "12kb", "4 MiB", "MiB", "lots", "0x10"}) {
    testing::expectError([&] { parseByteCount(bad, "XTRAIN_X"); },
                         {std::string("XTRAIN_X='") + bad + "': expected a byte count"});
  }
}

TEST(ByteCount, RefusesWhatDoesNotFitIn64Bits) {
  testing::expectError([] { parseByteCount("18446744073709551616", "x"); },
                       {"'18446744073709551616'", "64 bits"});
  testing::expectError([] { parseByteCount("17179869184GiB", "x"); },
                       {"'17179869184GiB'", "64 bits"});
}

TEST(ByteCount, RefusesLessThanTheMinimum) {
  EXPECT_EQ(parseByteCount("4", "x", 4), 4u);
  testing::expectError([] { parseByteCount("3", "XTRAIN_X", 4); }, {"XTRAIN_X='3'", "at least 4"});
  // The bound applies to the bytes, after the unit.
  EXPECT_EQ(parseByteCount("1KiB", "x", 1000), 1024u);
}

TEST(ByteCount, FromTheEnvironment) {
  {
    ScopedEnv env(kVar, nullptr);
    EXPECT_EQ(readByteCount(kVar, 77), 77u);
  }
  {
    ScopedEnv env(kVar, "");
    EXPECT_EQ(readByteCount(kVar, 77), 77u);
  }
  {
    ScopedEnv env(kVar, "2MiB");
    EXPECT_EQ(readByteCount(kVar, 77), 2u << 20);
  }
  ScopedEnv env(kVar, "2 MiB");
  testing::expectError([] { readByteCount(kVar, 77); },
                       {std::string(kVar) + "='2 MiB': expected a byte count"});
}

}  // namespace
}  // namespace xtrain
