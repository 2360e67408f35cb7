// xtrain::format over fmt: "{}" reads as operator<< writes, specifiers apply, and a message never
// throws (extra arguments appended, missing ones left in place, a rejected specifier named).
#include "xtrain/format.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

struct Streamed {
  int v;
};
std::ostream& operator<<(std::ostream& os, const Streamed& s) {
  return os << "S" << s.v;
}

TEST(Format, PlainFieldsReadAsOperatorShiftWrites) {
  EXPECT_EQ(format("{} {} {} {}", 1, -2, true, "text"), "1 -2 true text");
  EXPECT_EQ(format("{} {} {}", 0.0190626123, 2.5f, 1e7), "0.0190626 2.5 1e+07");
  EXPECT_EQ(format("{}|{}", 'c', static_cast<uint8_t>('A')), "c|A");
  EXPECT_EQ(format("{} {}", Streamed{3}, std::vector<int>{1, 2, 3}), "S3 [1,2,3]");
  EXPECT_EQ(format("{} {}", std::string("s"), std::string_view("v")), "s v");
  EXPECT_EQ(format("{{literal}} {}", 1), "{literal} 1");
  EXPECT_EQ(format("no fields"), "no fields");
}

TEST(Format, SpecifiersApply) {
  EXPECT_EQ(format("fnv1a64:{:016x}", uint64_t{5251146103361099495ULL}),
            "fnv1a64:48dfd18f2a83d6e7");
  EXPECT_EQ(format("{:.3f} s", 0.0190626), "0.019 s");
  EXPECT_EQ(format("[{:>4}]", 7), "[   7]");
  EXPECT_EQ(format("[{:<3}]", std::string("a")), "[a  ]");
  EXPECT_EQ(format("{1} {0}", "a", "b"), "b a");
}

TEST(Format, NeverThrows) {
  EXPECT_EQ(format("a {} b", 1, 2, "x"), "a 1 b 2 x");
  EXPECT_EQ(format("a {} b {}", 1), "a 1 b {}");
  EXPECT_EQ(format("lone { brace {}", 1), "lone { brace 1");
  EXPECT_EQ(format("{\"json\": 1}"), "{\"json\": 1}");
  std::string bad;
  EXPECT_NO_THROW(bad = format("value {:q} here", 5));
  EXPECT_EQ(bad.rfind("value 5 here [format error: ", 0), 0u) << bad;
  const error e("step {:d} of {}", "text", 3);
  EXPECT_EQ(std::string(e.what()).rfind("step text of 3", 0), 0u) << e.what();
}

}  // namespace
}  // namespace xtrain
