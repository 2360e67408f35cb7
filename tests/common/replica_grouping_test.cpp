// ReplicaGrouping and its CommGroup conversions: every worked example and error of
// docs/replication-semantics.md section 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "testing/error_testing.hpp"
#include "xtrain/error.hpp"
#include "xtrain/replicagrouping.hpp"

namespace xtrain {
namespace {

using testing::errorOf;

using Groups = std::vector<std::vector<int64_t>>;

Groups groupsOf(const CommGroup& group, int64_t n) {
  return ReplicaGrouping::fromCommGroup(group, n).getGroups();
}

TEST(ReplicaGrouping, CommGroupsOverEightReplicas) {
  EXPECT_EQ(groupsOf({CommGroupType::Consecutive, 2}, 8), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(groupsOf({CommGroupType::Orthogonal, 2}, 8), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(groupsOf({CommGroupType::Orthogonal, 4}, 8), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(groupsOf({CommGroupType::All, 0}, 8), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(groupsOf({CommGroupType::All, 5}, 4), (Groups{{0, 1, 2, 3}}));  // k ignored
  EXPECT_EQ(groupsOf({CommGroupType::Ungrouped, 0}, 3), (Groups{{0}, {1}, {2}}));
}

TEST(ReplicaGrouping, CommGroupTable) {
  const int64_t n = 8;
  EXPECT_EQ(ReplicaGrouping::fromCommGroup({CommGroupType::All, 0}, n), ReplicaGrouping(8, 1, 8));
  EXPECT_EQ(ReplicaGrouping::fromCommGroup({CommGroupType::Consecutive, 4}, n),
            ReplicaGrouping(8, 1, 4));
  EXPECT_EQ(ReplicaGrouping::fromCommGroup({CommGroupType::Orthogonal, 4}, n),
            ReplicaGrouping(8, 2, 4));
  EXPECT_EQ(ReplicaGrouping::fromCommGroup({CommGroupType::Ungrouped, 0}, n),
            ReplicaGrouping(8, 1, 1));
}

TEST(ReplicaGrouping, StrideTwoSizeTwoIsNotACommGroup) {
  const ReplicaGrouping g(8, 2, 2);
  EXPECT_EQ(g.getNumReplicas(), 8);
  EXPECT_EQ(g.getStride(), 2);
  EXPECT_EQ(g.getGroupSize(), 2);
  EXPECT_EQ(g.getNumGroups(), 4);
  EXPECT_EQ(g.getGroups(), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(g.getReplicasAt(2), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(g.getReplicaAt(3), 5);
  EXPECT_EQ(g.getReplicaAt(3, 1), 7);
  const std::vector<int64_t> groupAt = {0, 1, 0, 1, 2, 3, 2, 3};
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(g.getGroupAt(r), groupAt[static_cast<size_t>(r)]) << r;
  EXPECT_FALSE(g.toCommGroup().has_value());
}

TEST(ReplicaGrouping, IndexInGroupOfEighteenStrideTwoSizeThree) {
  const ReplicaGrouping g(18, 2, 3);
  const std::vector<int64_t> want = {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2};
  for (int64_t r = 0; r < 18; ++r) {
    EXPECT_EQ(g.getIndexInGroupAt(r), want[static_cast<size_t>(r)]) << r;
  }
  EXPECT_EQ(g.getNumGroups(), 6);
  EXPECT_EQ(g.getReplicasAt(0), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(g.getReplicasAt(3), (std::vector<int64_t>{7, 9, 11}));
}

TEST(ReplicaGrouping, GroupAtIndexAndReplicaAtAreInverse) {
  for (auto [n, s, g] : std::vector<std::tuple<int, int, int>>{
           {8, 1, 2}, {8, 4, 2}, {8, 2, 2}, {18, 2, 3}, {16, 4, 2}, {12, 1, 12}, {24, 3, 4}}) {
    const ReplicaGrouping gr(n, s, g);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for (int64_t G = 0; G < gr.getNumGroups(); ++G) {
      for (int64_t i = 0; i < gr.getGroupSize(); ++i) {
        const int64_t r = gr.getReplicaAt(G, i);
        EXPECT_EQ(gr.getGroupAt(r), G) << gr;
        EXPECT_EQ(gr.getIndexInGroupAt(r), i) << gr;
        ++seen[static_cast<size_t>(r)];
      }
      // The representative is the lowest member.
      const auto members = gr.getReplicasAt(G);
      EXPECT_EQ(gr.getReplicaAt(G), *std::min_element(members.begin(), members.end()));
    }
    for (int c : seen) EXPECT_EQ(c, 1) << gr;  // the groups partition the replicas
  }
}

TEST(ReplicaGrouping, Transposes) {
  EXPECT_EQ(ReplicaGrouping(16, 1, 4).getTranspose(), ReplicaGrouping(16, 4, 4));
  EXPECT_EQ(ReplicaGrouping(16, 2, 8).getTranspose(), ReplicaGrouping(16, 1, 2));
  EXPECT_EQ(ReplicaGrouping(16, 8, 2).getTranspose(), ReplicaGrouping(16, 1, 8));
  EXPECT_EQ(ReplicaGrouping(8, 2, 4).getTranspose(), ReplicaGrouping(8, 1, 2));  // PopART's doc
  const std::string m = errorOf([] { (void)ReplicaGrouping(12, 3, 2).getTranspose(); });
  EXPECT_CONTAINS(m, "cannot be represented");
  EXPECT_CONTAINS(m, "ReplicaGrouping(numReplicas=12, stride=3, groupSize=2)");
  // Transposing twice gives the grouping back; the group of a replica in the transpose is its index
  // in its group here.
  for (auto [n, s, g] : std::vector<std::tuple<int, int, int>>{
           {16, 1, 4}, {16, 2, 8}, {16, 8, 2}, {8, 1, 8}, {8, 1, 1}, {6, 3, 2}}) {
    const ReplicaGrouping gr(n, s, g);
    const ReplicaGrouping t = gr.getTranspose();
    EXPECT_EQ(t.getTranspose(), gr) << gr;
    for (int64_t r = 0; r < n; ++r) EXPECT_EQ(t.getGroupAt(r), gr.getIndexInGroupAt(r)) << gr;
  }
}

TEST(ReplicaGrouping, Complements) {
  for (int64_t n : {4, 8, 12}) {
    for (unsigned k : {1u, 2u, 4u}) {
      if (n % k != 0) continue;
      const unsigned nk = static_cast<unsigned>(n) / k;
      if (k > 1 && nk > 1) {
        EXPECT_EQ(complementOf({CommGroupType::Consecutive, k}, n),
                  CommGroup(CommGroupType::Orthogonal, nk));
        EXPECT_EQ(complementOf({CommGroupType::Orthogonal, nk}, n),
                  CommGroup(CommGroupType::Consecutive, k));
      }
    }
    EXPECT_EQ(complementOf({CommGroupType::Ungrouped, 0}, n), CommGroup(CommGroupType::All, 0));
    EXPECT_EQ(complementOf({CommGroupType::All, 0}, n), CommGroup(CommGroupType::Ungrouped, 0));
  }
  EXPECT_EQ(complementOf({CommGroupType::Consecutive, 2}, 8),
            CommGroup(CommGroupType::Orthogonal, 4));
  // Degenerate sizes: Consecutive(1) is Ungrouped, Consecutive(N) is All.
  EXPECT_EQ(complementOf({CommGroupType::Consecutive, 1}, 8), CommGroup(CommGroupType::All, 0));
  EXPECT_EQ(complementOf({CommGroupType::Consecutive, 8}, 8),
            CommGroup(CommGroupType::Ungrouped, 0));
  // A replica's partners in a group and in its complement group share only that replica.
  const auto a = ReplicaGrouping::fromCommGroup({CommGroupType::Consecutive, 2}, 8);
  const auto b =
      ReplicaGrouping::fromCommGroup(complementOf({CommGroupType::Consecutive, 2}, 8), 8);
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t x : a.getReplicasAt(a.getGroupAt(r))) {
      if (x != r) {
        EXPECT_NE(b.getGroupAt(x), b.getGroupAt(r));
      }
    }
  }
}

TEST(ReplicaGrouping, ToCommGroup) {
  using T = CommGroupType;
  EXPECT_EQ(ReplicaGrouping(8, 1, 2).toCommGroup(), CommGroup(T::Consecutive, 2));
  EXPECT_EQ(ReplicaGrouping(8, 4, 2).toCommGroup(), CommGroup(T::Orthogonal, 2));
  EXPECT_EQ(ReplicaGrouping(8, 2, 4).toCommGroup(), CommGroup(T::Orthogonal, 4));
  EXPECT_EQ(ReplicaGrouping(8, 1, 8).toCommGroup(), CommGroup(T::All, 0));
  EXPECT_EQ(ReplicaGrouping(8, 1, 1).toCommGroup(), CommGroup(T::Ungrouped, 0));
  EXPECT_FALSE(ReplicaGrouping(8, 2, 2).toCommGroup().has_value());
  EXPECT_FALSE(ReplicaGrouping(18, 2, 3).toCommGroup().has_value());
  // CommGroup -> ReplicaGrouping -> CommGroup is the identity for non-degenerate sizes.
  for (auto cg : {CommGroup(T::Consecutive, 2), CommGroup(T::Orthogonal, 2),
                  CommGroup(T::Orthogonal, 4), CommGroup(T::All, 0), CommGroup(T::Ungrouped, 0)}) {
    EXPECT_EQ(ReplicaGrouping::fromCommGroup(cg, 8).toCommGroup(), cg) << cg;
  }
}

TEST(ReplicaGrouping, DefaultsStrAndEquality) {
  EXPECT_EQ(ReplicaGrouping(8), ReplicaGrouping(8, 1, 8));
  EXPECT_EQ(ReplicaGrouping(8, 2), ReplicaGrouping(8, 2, 4));
  EXPECT_EQ(ReplicaGrouping(8, 8), ReplicaGrouping(8, 1, 1));
  EXPECT_NE(ReplicaGrouping(8, 2, 2), ReplicaGrouping(8, 1, 2));
  EXPECT_EQ(ReplicaGrouping(8, 2, 2).str(),
            "ReplicaGrouping(numReplicas=8, stride=2, groupSize=2)");
  std::ostringstream os;
  os << ReplicaGrouping(4, 1, 2) << " " << CommGroup(CommGroupType::Orthogonal, 2);
  EXPECT_EQ(os.str(),
            "ReplicaGrouping(numReplicas=4, stride=1, groupSize=2) "
            "CommGroup(type=Orthogonal, replicaGroupSize=2)");
  // The stride is taken as 1 when the group size is 1.
  EXPECT_EQ(ReplicaGrouping(4, 2, 1).getStride(), 1);
  EXPECT_EQ(ReplicaGrouping(4, 2, 1), ReplicaGrouping(4, 1, 1));
}

TEST(ReplicaGrouping, ErrorsOfSection3) {
  std::string m = errorOf([] { ReplicaGrouping(4, 3, 1); });
  EXPECT_CONTAINS(m,
                  "the number of replicas must be divisible by the product of the stride and "
                  "the group size");
  EXPECT_CONTAINS(m, "ReplicaGrouping(numReplicas=4, stride=3, groupSize=1)");

  m = errorOf([] { (void)ReplicaGrouping(1, 1, 1).getGroupAt(1); });
  EXPECT_CONTAINS(m, "outside the valid range");
  EXPECT_CONTAINS(m, "ReplicaGrouping(numReplicas=1, stride=1, groupSize=1)");

  const ReplicaGrouping g(8, 2, 2);
  for (auto f : std::vector<std::function<void()>>{
           [&] { (void)g.getGroupAt(-1); }, [&] { (void)g.getGroupAt(8); },
           [&] { (void)g.getIndexInGroupAt(8); }, [&] { (void)g.getReplicaAt(4); },
           [&] { (void)g.getReplicaAt(0, 2); }, [&] { (void)g.getReplicasAt(-1); }}) {
    m = errorOf(f);
    EXPECT_CONTAINS(m, "outside the valid range");
    EXPECT_CONTAINS(m, g.str());
  }

  EXPECT_CONTAINS(errorOf([] { ReplicaGrouping(0, 1, 1); }), "positive");
  EXPECT_CONTAINS(errorOf([] { ReplicaGrouping(4, 0, 1); }), "stride must be a positive");
  EXPECT_CONTAINS(errorOf([] { ReplicaGrouping(4, 1, 0); }), "group size must be a positive");
  EXPECT_CONTAINS(errorOf([] { ReplicaGrouping(8, 3); }), "divisible");

  m = errorOf([] { (void)ReplicaGrouping::fromCommGroup({CommGroupType::Consecutive, 3}, 8); });
  EXPECT_CONTAINS(m, "CommGroup(type=Consecutive, replicaGroupSize=3) over 8 replicas");
  EXPECT_CONTAINS(m, "divide the number of replicas");
  EXPECT_ANY_THROW((void)ReplicaGrouping::fromCommGroup({CommGroupType::Orthogonal, 0}, 8));
  EXPECT_ANY_THROW((void)ReplicaGrouping::fromCommGroup({CommGroupType::All, 0}, 0));
}

}  // namespace
}  // namespace xtrain
