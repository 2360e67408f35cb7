// VariableSettings: the query table, host shapes, worked examples and errors of
// docs/replication-semantics.md section 4.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "testing/error_testing.hpp"
#include "xtrain/error.hpp"
#include "xtrain/variablesettings.hpp"

namespace xtrain {
namespace {

using testing::errorOf;

using Groups = std::vector<std::vector<int64_t>>;
using T = CommGroupType;
using M = VariableRetrievalMode;

struct Row {
  int64_t groupCount, realGroupSize, stride;
  std::vector<int64_t> representatives;
  int64_t returnedOnePerGroup, returnedAllReplicas;
};

void expectRow(const CommGroup& domain, int64_t r, const Row& want) {
  SCOPED_TRACE(toString(domain) + " over " + std::to_string(r) + " replicas");
  const VariableSettings one(domain, M::OnePerGroup);
  const VariableSettings all(domain, M::AllReplicas);
  EXPECT_EQ(one.getGroupCount(r), want.groupCount);
  EXPECT_EQ(one.getRealGroupSize(r), want.realGroupSize);
  EXPECT_EQ(one.getStride(r), want.stride);
  EXPECT_EQ(one.numReplicasReturningVariable(r), want.returnedOnePerGroup);
  EXPECT_EQ(all.numReplicasReturningVariable(r), want.returnedAllReplicas);
  ASSERT_EQ(static_cast<int64_t>(want.representatives.size()), want.groupCount);
  const Groups groups = one.groups(r);
  ASSERT_EQ(static_cast<int64_t>(groups.size()), want.groupCount);
  for (int64_t g = 0; g < want.groupCount; ++g) {
    const auto rep = want.representatives[static_cast<size_t>(g)];
    EXPECT_EQ(one.getGroupRepresentative(g), rep) << "group " << g;
    EXPECT_EQ(one.getGroupRepresentative(g, r), rep) << "group " << g;
    // The representative is the group's lowest replica id.
    const auto& members = groups[static_cast<size_t>(g)];
    EXPECT_EQ(*std::min_element(members.begin(), members.end()), rep) << "group " << g;
    EXPECT_EQ(static_cast<int64_t>(members.size()), want.realGroupSize);
  }
}

// The table of section 4 (R replicas, group size k).
TEST(VariableSettings, QueryTable) {
  expectRow({T::All, 0}, 8, {1, 8, 1, {0}, 1, 8});
  expectRow({T::All, 0}, 1, {1, 1, 1, {0}, 1, 1});
  expectRow({T::Consecutive, 2}, 8, {4, 2, 1, {0, 2, 4, 6}, 4, 8});
  expectRow({T::Consecutive, 4}, 8, {2, 4, 1, {0, 4}, 2, 8});
  expectRow({T::Orthogonal, 2}, 8, {4, 2, 4, {0, 1, 2, 3}, 4, 8});
  expectRow({T::Orthogonal, 4}, 8, {2, 4, 2, {0, 1}, 2, 8});
  expectRow({T::Ungrouped, 0}, 4, {4, 1, 1, {0, 1, 2, 3}, 4, 4});
  expectRow({T::Consecutive, 2}, 4, {2, 2, 1, {0, 2}, 2, 4});
}

TEST(VariableSettings, GroupsFollowTheCommGroup) {
  EXPECT_EQ(VariableSettings(CommGroup(T::Consecutive, 2)).groups(8),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(VariableSettings(CommGroup(T::Orthogonal, 2)).groups(8),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(VariableSettings().groups(3), (Groups{{0, 1, 2}}));
  EXPECT_EQ(VariableSettings(CommGroup(T::Ungrouped, 0)).groups(2), (Groups{{0}, {1}}));
  EXPECT_EQ(VariableSettings(CommGroup(T::Orthogonal, 2)).getReplicaGrouping(8),
            ReplicaGrouping(8, 4, 2));
}

TEST(VariableSettings, DefaultsAndConstructors) {
  const VariableSettings d;
  EXPECT_TRUE(d.isUsingCommGroup());
  EXPECT_EQ(d.getSharedVariableDomain(), CommGroup(T::All, 0));
  EXPECT_EQ(d.getRetrievalMode(), M::OnePerGroup);
  EXPECT_EQ(d, VariableSettings(CommGroup()));
  EXPECT_EQ(VariableSettings(M::AllReplicas),
            VariableSettings(CommGroup(T::All, 0), M::AllReplicas));
  EXPECT_EQ(VariableSettings(M::AllReplicas).getRetrievalMode(), M::AllReplicas);

  const VariableSettings c(CommGroup(T::Consecutive, 2), M::AllReplicas);
  EXPECT_EQ(c.getSharedVariableDomain(), CommGroup(T::Consecutive, 2));
  EXPECT_EQ(c.getCommGroupType(), T::Consecutive);
  EXPECT_EQ(c.getGroupSize(), 2);
  EXPECT_EQ(c.getStride(), 0);  // as PopART: no stride of its own
  EXPECT_NE(c, VariableSettings(CommGroup(T::Consecutive, 2)));

  const VariableSettings s(4, 2);
  EXPECT_FALSE(s.isUsingCommGroup());
  EXPECT_EQ(s.getStride(), 4);
  EXPECT_EQ(s.getGroupSize(), 2);
  EXPECT_EQ(s.getRetrievalMode(), M::OnePerGroup);
  EXPECT_EQ(VariableSettings(4, 2, M::AllReplicas).getRetrievalMode(), M::AllReplicas);
  // The stride is taken as 1 when the group size is 1.
  EXPECT_EQ(VariableSettings(4, 1).getStride(), 1);
  EXPECT_EQ(VariableSettings(4, 1), VariableSettings(1, 1));
  // Same groups, different descriptions: not equal (as in PopART).
  EXPECT_NE(VariableSettings(1, 2), VariableSettings(CommGroup(T::Consecutive, 2)));
  EXPECT_EQ(VariableSettings(1, 2).groups(8),
            VariableSettings(CommGroup(T::Consecutive, 2)).groups(8));

  const VariableSettings g(ReplicaGrouping(8, 2, 2), M::AllReplicas);
  EXPECT_FALSE(g.isUsingCommGroup());
  EXPECT_EQ(g.getReplicaGrouping(8), ReplicaGrouping(8, 2, 2));
  EXPECT_EQ(g.getRetrievalMode(), M::AllReplicas);
}

// Section 4: weight [2,3,4], R = 4, Consecutive(2): init and OnePerGroup buffers [2,2,3,4];
// AllReplicas [4,2,3,4].
TEST(VariableSettings, HostShapesOfAConsecutiveTwoWeight) {
  const Shape w{2, 3, 4};
  const VariableSettings one(CommGroup(T::Consecutive, 2), M::OnePerGroup);
  const VariableSettings all(CommGroup(T::Consecutive, 2), M::AllReplicas);
  EXPECT_EQ(one.shapeOnHost(w, 4), (Shape{2, 2, 3, 4}));
  EXPECT_EQ(all.shapeOnHost(w, 4), (Shape{2, 2, 3, 4}));  // the initial value: one per group
  EXPECT_EQ(one.shapeOnHostForRetrieval(w, 4), (Shape{2, 2, 3, 4}));
  EXPECT_EQ(all.shapeOnHostForRetrieval(w, 4), (Shape{4, 2, 3, 4}));
  EXPECT_EQ(one.shapeOnReplica({2, 2, 3, 4}, 4), w);
  EXPECT_EQ(all.shapeOnReplica({2, 2, 3, 4}, 4, "w"), w);
}

TEST(VariableSettings, HostShapesWithOneGroupAreUnchanged) {
  const Shape w{2, 3};
  EXPECT_EQ(VariableSettings().shapeOnHost(w, 8), w);
  EXPECT_EQ(VariableSettings().shapeOnReplica(w, 8), w);
  EXPECT_EQ(VariableSettings().shapeOnHostForRetrieval(w, 8), w);
  EXPECT_EQ(VariableSettings(M::AllReplicas).shapeOnHostForRetrieval(w, 8), (Shape{8, 2, 3}));
  EXPECT_EQ(VariableSettings(CommGroup(T::Ungrouped, 0)).shapeOnHost(w, 1), w);
  EXPECT_EQ(VariableSettings(CommGroup(T::Ungrouped, 0)).shapeOnHost(w, 3), (Shape{3, 2, 3}));
}

// Section 4: VariableSettings(stride 4, size 2) at R = 8: group count 4, stride 4, real size 2;
// returns 4 (OnePerGroup) or 8 (AllReplicas) values.
TEST(VariableSettings, StrideFourSizeTwoAtEightReplicas) {
  const VariableSettings s(4, 2);
  EXPECT_EQ(s.getGroupCount(8), 4);
  EXPECT_EQ(s.getStride(8), 4);
  EXPECT_EQ(s.getRealGroupSize(8), 2);
  EXPECT_EQ(s.numReplicasReturningVariable(8), 4);
  EXPECT_EQ(VariableSettings(4, 2, M::AllReplicas).numReplicasReturningVariable(8), 8);
  EXPECT_EQ(s.groups(8), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(s.getReplicaGrouping(8).toCommGroup(), CommGroup(T::Orthogonal, 2));
  // The same settings over 16 replicas: (16, 4, 2) is not a CommGroup.
  EXPECT_EQ(s.groups(16),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_FALSE(s.getReplicaGrouping(16).toCommGroup().has_value());
  for (int64_t g = 0; g < 8; ++g) {
    EXPECT_EQ(s.getGroupRepresentative(g), s.getReplicaGrouping(16).getReplicaAt(g)) << g;
  }
  EXPECT_EQ(s.shapeOnHost({3}, 8), (Shape{4, 3}));
}

// Section 4: ReplicaGrouping(8,1,4): shapeOnHost([3]) = [2,3]; shapeOnHost([]) = [2].
TEST(VariableSettings, FromReplicaGroupingEightOneFour) {
  const VariableSettings s(ReplicaGrouping(8, 1, 4));
  EXPECT_EQ(s.shapeOnHost({3}, 8), (Shape{2, 3}));
  EXPECT_EQ(s.shapeOnHost({}, 8), (Shape{2}));
  EXPECT_EQ(s.shapeOnReplica({2}, 8), (Shape{}));
  EXPECT_EQ(s.shapeOnReplica({2, 3}, 8), (Shape{3}));
  EXPECT_EQ(s.getGroupCount(8), 2);
  EXPECT_EQ(s.getGroupRepresentative(1), 4);
  EXPECT_EQ(s.str(),
            "VariableSettings(ReplicaGrouping(numReplicas=8, stride=1, groupSize=4), "
            "retrievalMode=OnePerGroup)");
}

TEST(VariableSettings, RepresentativesOfStrideGroupings) {
  // (18, 2, 3): groups {0,2,4} {1,3,5} {6,8,10} {7,9,11} {12,14,16} {13,15,17}.
  const VariableSettings s(2, 3);
  const std::vector<int64_t> want = {0, 1, 6, 7, 12, 13};
  for (int64_t g = 0; g < 6; ++g) {
    EXPECT_EQ(s.getGroupRepresentative(g), want[static_cast<size_t>(g)]) << g;
    EXPECT_EQ(s.getGroupRepresentative(g, 18), want[static_cast<size_t>(g)]) << g;
  }
}

TEST(VariableSettings, StrAndStreams) {
  EXPECT_EQ(VariableSettings().str(),
            "VariableSettings(sharedVariableDomain=CommGroup(type=All, replicaGroupSize=0), "
            "retrievalMode=OnePerGroup)");
  EXPECT_EQ(VariableSettings(4, 2, M::AllReplicas).str(),
            "VariableSettings(stride=4, groupSize=2, retrievalMode=AllReplicas)");
  std::ostringstream os;
  os << M::AllReduceReplicas << " " << VariableSettings(CommGroup(T::Orthogonal, 2));
  EXPECT_EQ(os.str(),
            "AllReduceReplicas VariableSettings(sharedVariableDomain=CommGroup(type=Orthogonal, "
            "replicaGroupSize=2), retrievalMode=OnePerGroup)");
}

TEST(VariableSettings, GroupsThatDoNotDivideTheReplicas) {
  const VariableSettings c(CommGroup(T::Consecutive, 3));
  for (auto f : std::vector<std::function<void()>>{
           [&] { (void)c.getGroupCount(8); }, [&] { (void)c.shapeOnHost({2}, 8); },
           [&] { (void)c.numReplicasReturningVariable(8); }, [&] { c.verify(8); },
           [&] { (void)c.groups(8); }}) {
    const std::string m = errorOf(f);
    EXPECT_CONTAINS(m, "do not divide the replicas");
    EXPECT_CONTAINS(m, "CommGroup(type=Consecutive, replicaGroupSize=3)");
    EXPECT_CONTAINS(m, "8 replicas");
  }
  EXPECT_NO_THROW(c.verify(6));
  EXPECT_CONTAINS(errorOf([] { VariableSettings(CommGroup(T::Orthogonal, 4)).verify(6); }),
                  "do not divide the replicas");

  std::string m = errorOf([] { (void)VariableSettings(4, 2).getGroupCount(4); });
  EXPECT_CONTAINS(m, "do not divide the replicas");
  EXPECT_CONTAINS(m, "divisible by the product of the stride and the group size");
  EXPECT_CONTAINS(m, "VariableSettings(stride=4, groupSize=2");
  EXPECT_CONTAINS(errorOf([] { VariableSettings(2, 3).verify(9); }), "do not divide the replicas");

  m = errorOf([] { VariableSettings(ReplicaGrouping(8, 1, 4)).verify(4); });
  EXPECT_CONTAINS(m, "over 4 replicas");
  EXPECT_CONTAINS(m, "its grouping is for 8 replicas");

  EXPECT_CONTAINS(errorOf([] { VariableSettings().verify(0); }), "positive");
}

TEST(VariableSettings, ShapeOnReplicaChecksTheLeadingDimension) {
  const VariableSettings s(CommGroup(T::Consecutive, 2));
  std::string m = errorOf([&] { (void)s.shapeOnReplica({3, 2, 3, 4}, 4, "w"); });
  EXPECT_CONTAINS(m, "tensor 'w'");
  EXPECT_CONTAINS(m, "[3,2,3,4]");  // the shape given
  EXPECT_CONTAINS(m, "[2,2,3,4]");  // the shape expected
  EXPECT_CONTAINS(m, "group count 2");
  m = errorOf([&] { (void)s.shapeOnReplica({}, 4); });
  EXPECT_CONTAINS(m, "[]");
  EXPECT_CONTAINS(m, "group count 2");
}

TEST(VariableSettings, AllReduceReplicasIsRejectedWhereACountIsNeeded) {
  const VariableSettings s(CommGroup(T::Consecutive, 2), M::AllReduceReplicas);
  EXPECT_EQ(s.getRetrievalMode(), M::AllReduceReplicas);  // constructing is fine
  EXPECT_EQ(s.getGroupCount(4), 2);                       // so are the group queries
  EXPECT_EQ(s.shapeOnHost({3}, 4), (Shape{2, 3}));
  for (auto f : std::vector<std::function<void()>>{[&] { (void)s.numReplicasReturningVariable(4); },
                                                   [&] { (void)s.shapeOnHostForRetrieval({3}, 4); },
                                                   [&] { s.verify(4); }}) {
    const std::string m = errorOf(f);
    EXPECT_CONTAINS(m, "AllReduceReplicas");
    EXPECT_CONTAINS(m, "not supported");
  }
}

TEST(VariableSettings, BadConstructionAndDomainQueries) {
  EXPECT_CONTAINS(errorOf([] { VariableSettings(CommGroup(T::Consecutive, 0)); }),
                  "replica group size of at least 1");
  EXPECT_CONTAINS(errorOf([] { VariableSettings(CommGroup(T::Orthogonal, 0)); }),
                  "replica group size of at least 1");
  EXPECT_NO_THROW(VariableSettings(CommGroup(T::Ungrouped, 0)));
  EXPECT_CONTAINS(errorOf([] { VariableSettings(0, 2); }), "must be positive");
  EXPECT_CONTAINS(errorOf([] { VariableSettings(2, -1); }), "must be positive");
  const std::string m = errorOf([] { (void)VariableSettings(4, 2).getSharedVariableDomain(); });
  EXPECT_CONTAINS(m, "not built from a CommGroup");
  EXPECT_CONTAINS(m, "getReplicaGrouping");
  EXPECT_CONTAINS(errorOf([] { (void)VariableSettings().getGroupRepresentative(1); }),
                  "outside the valid range");
  EXPECT_CONTAINS(
      errorOf([] {
        (void)VariableSettings(CommGroup(T::Consecutive, 2)).getGroupRepresentative(4, 8);
      }),
      "outside the valid range");
}

}  // namespace
}  // namespace xtrain
