// Replica groups: the section-3 formulas, their errors, and communicators split by CommGroup and
// ReplicaGrouping.
#include <map>
#include <set>
#include <type_traits>

#include "comm/grouping.hpp"
#include "comm_test_util.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;

std::vector<std::vector<int>> groupsOf(const Grouping& g) {
  std::vector<std::vector<int>> out;
  for (int64_t G = 0; G < g.getNumGroups(); ++G) out.push_back(membersOf(g, G));
  return out;
}

using Groups = std::vector<std::vector<int>>;

// comm::Grouping is the public ReplicaGrouping: the arithmetic exists once.
static_assert(std::is_same_v<Grouping, ReplicaGrouping>);

TEST(Grouping, WorkedExamplesOfSection3) {
  EXPECT_EQ(groupsOf(Grouping::fromCommGroup({CommGroupType::Consecutive, 2}, 8)),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(groupsOf(Grouping::fromCommGroup({CommGroupType::Orthogonal, 2}, 8)),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(groupsOf(Grouping::fromCommGroup({CommGroupType::Orthogonal, 4}, 8)),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(groupsOf(Grouping(8, 2, 2)), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(groupsOf(Grouping::fromCommGroup({CommGroupType::All, 0}, 4)), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(groupsOf(Grouping::fromCommGroup({CommGroupType::Ungrouped, 0}, 3)),
            (Groups{{0}, {1}, {2}}));
  const Grouping g18(18, 2, 3);
  const std::vector<int64_t> want = {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2};
  for (int64_t r = 0; r < 18; ++r)
    EXPECT_EQ(g18.getIndexInGroupAt(r), want[static_cast<size_t>(r)]) << r;
}

TEST(Grouping, GroupAtAndReplicaAtAreInverse) {
  for (auto [n, s, g] : std::vector<std::tuple<int, int, int>>{
           {8, 1, 2}, {8, 4, 2}, {8, 2, 2}, {18, 2, 3}, {16, 4, 2}, {12, 1, 12}}) {
    const Grouping gr(n, s, g);
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(gr.getReplicaAt(gr.getGroupAt(r), gr.getIndexInGroupAt(r)), r)
          << gr.str() << " replica " << r;
    }
  }
}

TEST(Grouping, ErrorsOfSection3) {
  try {
    Grouping(4, 3, 1);
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("the number of replicas must be divisible by the product "
                                         "of the stride and the group size"),
              std::string::npos)
        << e.what();
  }
  try {
    Grouping(1, 1, 1).getGroupAt(1);
    FAIL() << "expected an error";
  } catch (const error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("outside the valid range"), std::string::npos) << m;
    EXPECT_NE(m.find("ReplicaGrouping(numReplicas=1, stride=1, groupSize=1)"), std::string::npos)
        << m;
  }
  EXPECT_THROW(Grouping::fromCommGroup({CommGroupType::Consecutive, 3}, 8), error);
  EXPECT_THROW(Grouping::fromCommGroup({CommGroupType::Orthogonal, 0}, 8), error);
  EXPECT_THROW(Grouping(0, 1, 1), error);
  // Stride is taken as 1 when the group size is 1.
  EXPECT_EQ(Grouping(4, 2, 1).getStride(), 1);
}

// Each rank contributes (rank + 1); every member of a group must get the sum over its group's
// members.
void checkGroupAllReduce(const std::string& backend, int world, const Grouping& grouping) {
  std::vector<int64_t> got(static_cast<size_t>(world), -1);
  std::vector<int64_t> groupOf(static_cast<size_t>(world), -1);
  std::vector<int> sizes(static_cast<size_t>(world), -1);
  runWorld(backend, world, [&](Communicator& parent) {
    auto gc = splitByGrouping(parent, grouping, "g");
    int64_t v = parent.rank() + 1;
    gc.comm->allReduceSync(viewOf(&v, 1, DataType::INT64));
    // The parent still works after the split, and both can be used in turn.
    int64_t w = 1;
    parent.allReduceSync(viewOf(&w, 1, DataType::INT64));
    EXPECT_EQ(w, parent.size());
    EXPECT_EQ(gc.comm->rank(), gc.indexInGroup);
    got[static_cast<size_t>(parent.rank())] = v;
    groupOf[static_cast<size_t>(parent.rank())] = gc.group;
    sizes[static_cast<size_t>(parent.rank())] = gc.comm->size();
  });
  for (int r = 0; r < world; ++r) {
    const auto members = membersOf(grouping, grouping.getGroupAt(r));
    int64_t want = 0;
    for (int m : members) want += m + 1;
    EXPECT_EQ(got[static_cast<size_t>(r)], want) << grouping.str() << " rank " << r;
    EXPECT_EQ(groupOf[static_cast<size_t>(r)], grouping.getGroupAt(r));
    EXPECT_EQ(sizes[static_cast<size_t>(r)], grouping.getGroupSize());
  }
}

using SplitParam = std::tuple<std::string, int, CommGroupType, int>;

class SplitTest : public ::testing::TestWithParam<SplitParam> {};

// World sizes {1,2,3,4,8} x group types x group sizes {1,2,4}, where the group size divides the
// world (the invalid layouts are tested as errors elsewhere).
std::vector<SplitParam> validSplits() {
  std::vector<SplitParam> params;
  for (const auto& backend : threadBackends())
    for (int world : {1, 2, 3, 4, 8}) {
      for (auto type : {CommGroupType::All, CommGroupType::Consecutive, CommGroupType::Orthogonal,
                        CommGroupType::Ungrouped}) {
        for (int k : {1, 2, 4}) {
          const bool sized =
              type == CommGroupType::Consecutive || type == CommGroupType::Orthogonal;
          if (!sized || world % k == 0) params.emplace_back(backend, world, type, k);
        }
      }
    }
  return params;
}

TEST_P(SplitTest, AllReduceStaysInsideEachGroup) {
  const auto [backend, world, type, k] = GetParam();
  checkGroupAllReduce(backend, world,
                      Grouping::fromCommGroup({type, static_cast<unsigned>(k)}, world));
}

INSTANTIATE_TEST_SUITE_P(All, SplitTest, ::testing::ValuesIn(validSplits()),
                         [](const ::testing::TestParamInfo<SplitParam>& info) {
                           return std::get<0>(info.param) + "_n" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  toString(std::get<2>(info.param)) + "_k" +
                                  std::to_string(std::get<3>(info.param));
                         });

class Split : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(All, Split, ::testing::ValuesIn(threadBackends()),
                         [](const auto& info) { return info.param; });

TEST_P(Split, ReplicaGroupingNotExpressibleAsCommGroup) {
  checkGroupAllReduce(GetParam(), 8, Grouping(8, 2, 2));
}

// Section 9, case 2: N = 4, Consecutive(2) reduce-scatter of arange(12), the same on every replica:
// replica r holds 2 * x[(r%2)*6 : (r%2+1)*6].
TEST_P(Split, AcceptanceConsecutiveTwoReduceScatterOfArange12) {
  std::vector<std::vector<float>> got(4);
  runWorld(GetParam(), 4, [&](Communicator& world) {
    auto gc = splitByCommGroup(world, {CommGroupType::Consecutive, 2}, "rts");
    std::vector<float> x(12);
    for (int i = 0; i < 12; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
    std::vector<float> shard(6);
    gc.comm->reduceScatterSync(viewOf(x.data(), 12, DataType::FLOAT),
                               viewOf(shard.data(), 6, DataType::FLOAT));
    got[static_cast<size_t>(world.rank())] = shard;
  });
  for (size_t r = 0; r < 4; ++r) {
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(got[r][i], 2.0f * static_cast<float>((r % 2) * 6 + i)) << "replica " << r;
    }
  }
}

// RTS placement (section 5): reduce-scatter over Orthogonal(2), then all-reduce over the
// complementary Consecutive(4) group, then all-gather: equals a plain all-reduce over the world.
TEST_P(Split, ReduceScatterThenComplementThenAllGatherEqualsAllReduce) {
  std::vector<std::vector<float>> got(8);
  runWorld(GetParam(), 8, [&](Communicator& world) {
    auto shardDomain = splitByCommGroup(world, {CommGroupType::Orthogonal, 2}, "shard");
    auto complement = splitByCommGroup(world, {CommGroupType::Consecutive, 4}, "replica");
    std::vector<float> x(13);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i) + static_cast<float>(world.rank());
    std::vector<float> shard(7);
    shardDomain.comm->reduceScatterSync(viewOf(x.data(), 13, DataType::FLOAT),
                                        viewOf(shard.data(), 7, DataType::FLOAT));
    complement.comm->allReduceSync(viewOf(shard.data(), 7, DataType::FLOAT));
    std::vector<float> full(13);
    shardDomain.comm->allGatherSync(viewOf(shard.data(), 7, DataType::FLOAT),
                                    viewOf(full.data(), 13, DataType::FLOAT));
    got[static_cast<size_t>(world.rank())] = full;
  });
  for (const auto& full : got) {
    for (size_t i = 0; i < 13; ++i) EXPECT_EQ(full[i], 8.0f * static_cast<float>(i) + 28.0f) << i;
  }
}

TEST_P(Split, NestedSplitAndRepeatedNames) {
  runWorld(GetParam(), 8, [&](Communicator& world) {
    auto half = splitByCommGroup(world, {CommGroupType::Consecutive, 4}, "half");
    auto quarter = splitByCommGroup(*half.comm, {CommGroupType::Consecutive, 2}, "quarter");
    EXPECT_EQ(quarter.comm->name(), "world/half." + std::to_string(half.group) + "/quarter." +
                                        std::to_string(quarter.group));
    int32_t v = 1;
    quarter.comm->allReduceSync(viewOf(&v, 1, DataType::INT32));
    EXPECT_EQ(v, 2);
    // The same split again gives a fresh, independent communicator.
    auto again = splitByCommGroup(world, {CommGroupType::Consecutive, 4}, "half");
    int32_t w = 1;
    again.comm->allReduceSync(viewOf(&w, 1, DataType::INT32));
    EXPECT_EQ(w, 4);
  });
}

TEST_P(Split, BadArgumentsAreRejected) {
  runWorld(GetParam(), 4, [&](Communicator& world) {
    EXPECT_THROW(world.split({}, "x"), error);
    EXPECT_THROW(world.split({0, 4}, "x"), error);
    EXPECT_THROW(world.split({0, 0, 1, 2, 3}, "x"), error);
    const int other = (world.rank() + 1) % 4;
    EXPECT_THROW(world.split({other}, "x"), error);
    EXPECT_THROW(splitByCommGroup(world, {CommGroupType::Consecutive, 3}, "x"), error);
    EXPECT_THROW(splitByGrouping(world, Grouping(8, 1, 2), "x"), error);
  });
}

// Members that disagree on the member list never meet: a bounded wait naming the ranks that did not
// come.
TEST_P(Split, DisagreeingMembersTimeOut) {
  const auto errors = runWorldCollectErrors(
      GetParam(), 2,
      [&](Communicator& world) {
        if (world.rank() == 0) {
          (void)world.split({0, 1}, "pair");
        } else {
          (void)world.split({1, 0}, "pair");
        }
      },
      Milliseconds(200));
  for (const auto& e : errors) {
    EXPECT_NE(e.find("split of group 'world' into 'pair'"), std::string::npos) << e;
    EXPECT_NE(e.find("did not arrive"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace xtrain::comm
