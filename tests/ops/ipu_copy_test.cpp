// IpuCopy (ai.xtrain, docs/model-parallelism.md): the copy between the IPUs of a replica is the
// identity, byte for byte, for every element type; its IPU attributes are required. Its placement
// in a graph (ir/placement) is tested with the sessions (tests/session/virtual_graph_test.cpp).
#include <gtest/gtest.h>

#include <cstring>

#include "ir/placement/placement.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

BuildFn copy(int64_t from, int64_t to) {
  return [=](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "IpuCopy", in, attrs({{"sourceIpu", from}, {"destIpu", to}}), 1,
                 ir::kXtrainDomain);
  };
}

TEST(IpuCopy, CopiesEveryElementTypeBitForBit) {
  const HostTensor f = randomTensor({3, 5}, 2);
  const HostTensor out = runForward(copy(0, 1), {f})[0];
  ASSERT_EQ(out.info(), f.info());
  EXPECT_EQ(std::memcmp(out.raw(), f.raw(), static_cast<size_t>(f.info().nbytes())), 0);
  const HostTensor i = HostTensor::fromVector<int64_t>({4}, {1, -2, 3, 1LL << 40});
  EXPECT_EQ(runForward(copy(1, 0), {i})[0].toVector<int64_t>(), i.toVector<int64_t>());
  const HostTensor h = f.castTo(DataType::FLOAT16);
  const HostTensor oh = runForward(copy(2, 3), {h})[0];
  EXPECT_EQ(std::memcmp(oh.raw(), h.raw(), static_cast<size_t>(h.info().nbytes())), 0);
  const HostTensor empty(TensorInfo(DataType::FLOAT, {0, 3}));
  EXPECT_EQ(runForward(copy(0, 1), {empty})[0].nelms(), 0);
}

TEST(IpuCopy, NeedsItsIpus) {
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "IpuCopy", in, attrs({{"sourceIpu", int64_t{0}}}), 1,
                           ir::kXtrainDomain);
            },
            {randomTensor({2}, 1)});
      },
      {"IpuCopy", "attribute 'destIpu' (an IPU index >= 0) is required"});
}

}  // namespace
}  // namespace xtrain::testing
