// The agreements of comm/agreement.hpp on worlds of threads (every thread-capable backend) and on a
// job of one (a null communicator), against what each is defined to be.
#include "comm/agreement.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "comm_test_util.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;

class Agreement : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Backends, Agreement, ::testing::ValuesIn(threadBackends()),
                         [](const auto& info) { return info.param; });

TEST(AgreementAlone, ANullCommunicatorIsAJobOfOne) {
  EXPECT_TRUE(allTrue(nullptr, true));
  EXPECT_FALSE(allTrue(nullptr, false));
  EXPECT_TRUE(sameEverywhere(nullptr, 42));
  EXPECT_EQ(maxOf(nullptr, -5), -5);
  EXPECT_EQ(sumOf(nullptr, {1, 2}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(gatherStrings(nullptr, "mine"), std::vector<std::string>{"mine"});
}

TEST_P(Agreement, AllTrueOnlyWhenEveryRankIs) {
  for (int size : {2, 3}) {
    for (int liar = -1; liar < size; ++liar) {
      runWorld(GetParam(), size, [&](Communicator& c) {
        EXPECT_EQ(allTrue(&c, c.rank() != liar), liar < 0) << "size " << size << " liar " << liar;
      });
    }
  }
}

TEST_P(Agreement, SameEverywhereAtTheExtremes) {
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {0, 0}, {INT64_MIN, INT64_MIN}, {INT64_MAX, INT64_MAX}, {-1, -1},
      {0, 1}, {INT64_MIN, INT64_MAX}, {INT64_MAX, INT64_MIN}, {-1, 0}};
  for (const auto& [first, others] : cases) {
    runWorld(GetParam(), 3, [&](Communicator& c) {
      EXPECT_EQ(sameEverywhere(&c, c.rank() == 0 ? first : others), first == others)
          << first << " vs " << others;
    });
  }
}

TEST_P(Agreement, MaxAndSum) {
  runWorld(GetParam(), 4, [&](Communicator& c) {
    const int64_t r = c.rank();
    EXPECT_EQ(maxOf(&c, r == 2 ? INT64_MAX : -r), INT64_MAX);
    EXPECT_EQ(maxOf(&c, -r - 10), -10);
    EXPECT_EQ(sumOf(&c, {r, 1, r == 3 ? 7 : 0}), (std::vector<int64_t>{6, 4, 7}));
    EXPECT_EQ(sumOf(&c, {}), std::vector<int64_t>{});
  });
}

TEST_P(Agreement, GatherStringsOfAnyLengthAndBytes) {
  auto text = [](int r) {
    std::string s(static_cast<size_t>(r * 100), static_cast<char>(r));  // rank 0: empty
    if (r == 2) s += std::string("\0\xff\n", 3);
    return s;
  };
  runWorld(GetParam(), 3, [&](Communicator& c) {
    const auto all = gatherStrings(&c, text(c.rank()));
    ASSERT_EQ(all.size(), 3u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], text(r)) << "rank " << r;
    EXPECT_EQ(gatherStrings(&c, ""), std::vector<std::string>(3));
  });
}

TEST_P(Agreement, ATimeoutNamesTheAgreement) {
  const auto errors = runWorldCollectErrors(
      GetParam(), 2,
      [](Communicator& c) {
        if (c.rank() == 1) return;  // never arrives
        AgreementOptions o;
        o.timeout = Milliseconds(200);
        o.debugName = "the test's agreement";
        maxOf(&c, 1, o);
      },
      kTestTimeout);
  EXPECT_NE(errors[0].find("timed out"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("the test's agreement"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], "");
}

}  // namespace
}  // namespace xtrain::comm
