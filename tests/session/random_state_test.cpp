// RandomState: the words getRNGState returns and setRNGState takes, and the seeds a step derives
// from the seed and the count.
#include "session/random_state.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::session {
namespace {

TEST(RandomState, WordsAreTheSeedAndTheCountLowWordFirst) {
  RandomState r;
  r.setSeed(0x0123456789abcdefull);
  r.advance(0x100000002ull);
  EXPECT_EQ(r.words(), (std::vector<uint32_t>{0x89abcdefu, 0x01234567u, 2u, 1u}));
  RandomState copy;
  copy.setWords(r.words());
  EXPECT_EQ(copy.seed(), r.seed());
  EXPECT_EQ(copy.words(), r.words());
  EXPECT_EQ(copy.microBatchSeed(3, 1), r.microBatchSeed(3, 1));
}

TEST(RandomState, ANewSeedStartsTheCountAgain) {
  RandomState r;
  r.setSeed(7);
  const uint64_t first = r.updateSeed(0);
  r.advance(4);
  EXPECT_NE(r.updateSeed(0), first);
  r.setSeed(7);
  EXPECT_EQ(r.updateSeed(0), first);
  EXPECT_EQ(r.words()[2], 0u);
}

TEST(RandomState, SetWordsRefusesAnotherSize) {
  RandomState r;
  try {
    r.setWords({1, 2, 3});
    FAIL() << "a state of 3 words was taken";
  } catch (const xtrain::error& e) {
    EXPECT_STREQ(e.what(),
                 "Devicex::setRngStateValue received rngState of size 3; was expecting size 4 "
                 "(setRNGState takes the 4 words getRNGState returns: the seed and the "
                 "micro-batches run since it was set)");
  }
}

TEST(RandomState, EveryReplicaAndMicroBatchHasItsOwnSeed) {
  RandomState r;
  r.setSeed(42);
  std::set<uint64_t> seeds;
  for (int64_t replica = 0; replica < 8; ++replica) {
    for (int64_t iteration = 0; iteration < 8; ++iteration) {
      seeds.insert(r.microBatchSeed(replica, iteration));
    }
  }
  EXPECT_EQ(seeds.size(), 64u);
  // The step after this one (4 micro-batches) starts where this one's iteration 4 would be.
  const uint64_t ahead = r.microBatchSeed(2, 4);
  r.advance(4);
  EXPECT_EQ(r.microBatchSeed(2, 0), ahead);
}

}  // namespace
}  // namespace xtrain::session
