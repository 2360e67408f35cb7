// Checked products and sums of sizes: exact where they fit, size_overflow_error naming the quantity
// and its factors where they do not, never a wrapped value.
#include "common/checked_math.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "testing/error_testing.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, ExactProducts) {
  EXPECT_EQ(checkedProduct("p", {{"a", 3}, {"b", 5}, {"c", 7}}), 105);
  EXPECT_EQ(checkedProduct("p", {}), 1);
  EXPECT_EQ(checkedMul("p", kMax, 1), kMax);
  EXPECT_EQ(checkedAdd("s", kMax - 1, 1), kMax);
  // A zero factor makes the product 0, whatever the others would overflow to.
  EXPECT_EQ(checkedProduct("p", {{"a", kMax}, {"b", kMax}, {"c", 0}}), 0);
}

TEST(CheckedMath, OverflowNamesTheQuantityAndFactors) {
  try {
    checkedProduct("the samples of one step",
                   {{"--accumulation-factor", int64_t{1} << 62}, {"--micro-batch-size", 4}});
    FAIL() << "no size_overflow_error";
  } catch (const size_overflow_error& e) {
    const std::string msg = e.what();
    EXPECT_CONTAINS(msg, "the samples of one step overflows");
    EXPECT_CONTAINS(msg, "--accumulation-factor 4611686018427387904 x --micro-batch-size 4");
  }
  EXPECT_THROW(checkedMul("p", int64_t{1} << 32, int64_t{1} << 31), size_overflow_error);
  EXPECT_THROW(checkedAdd("s", kMax, 1), size_overflow_error);
  // The wrap that once passed a size check: 2^62 * 4 is 0 modulo 2^64.
  EXPECT_THROW(checkedMul("p", int64_t{1} << 62, 4), size_overflow_error);
}

TEST(CheckedMath, NegativeFactorsAreRefused) {
  EXPECT_CONTAINS(errorOf([] { checkedProduct("p", {{"--x", -1}}); }), "--x must not be negative");
  EXPECT_CONTAINS(errorOf([] { checkedAdd("s", 1, -2); }), "must not be negative");
}

TEST(CheckedMath, TensorInfoRefusesShapesWhoseSizeOverflows) {
  // [2^62 + 1, 4] has 2^64 + 4 elements: 4 once wrapped, which matched 16 bytes of data.
  EXPECT_THROW(TensorInfo(DataType::FLOAT, {(int64_t{1} << 62) + 1, 4}), size_overflow_error);
  // The element count fits, the byte count does not.
  EXPECT_THROW(TensorInfo(DataType::FLOAT, {int64_t{1} << 62}), size_overflow_error);
  EXPECT_EQ(TensorInfo(DataType::FLOAT, {int64_t{1} << 60}).nbytes(), int64_t{1} << 62);
  EXPECT_EQ(TensorInfo(DataType::FLOAT, {kMax, 0}).nbytes(), 0);
  EXPECT_THROW(shapeNelms({kMax, 2}), size_overflow_error);
}

}  // namespace
}  // namespace xtrain::testing
