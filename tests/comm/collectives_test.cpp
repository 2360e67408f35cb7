// Results of every collective against a naive reference: world size x element count x data type x
// operator, for every backend whose ranks can be threads (threadBackends()), over an in-memory
// store.
#include <cstring>
#include <tuple>

#include "comm_test_util.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;
using Op = CollectiveOperator;

const std::vector<int> kWorldSizes = {1, 2, 3, 4, 8};
// The large count spans many shm rounds (the slot is shrunk to 64 KiB below) without costing
// seconds per case.
const std::vector<size_t> kCounts = {0, 1, 1001, (size_t{1} << 18) + 3};

// Small shm slots, so multi-round paths run at test sizes. Set before any communicator exists.
const bool kSmallShmSlots = [] { return ::setenv("XTRAIN_SHM_SLOT_BYTES", "65536", 0) == 0; }();
const std::vector<DataType> kTypes = {DataType::FLOAT, DataType::FLOAT16, DataType::INT32,
                                      DataType::INT64, DataType::UINT8};

std::string typeName(DataType t) {
  return dataTypeName(t);
}

using ReduceParam = std::tuple<std::string, int, size_t, DataType, Op>;

std::string reduceParamName(const ::testing::TestParamInfo<ReduceParam>& info) {
  const auto& [backend, world, count, type, op] = info.param;
  return backend + "_n" + std::to_string(world) + "_c" + std::to_string(count) + "_" +
         typeName(type) + "_" + toString(op);
}

// Inputs of every rank; expected[i] is the reduction of element i (unused for Local).
struct Case {
  std::vector<TypedBuffer> inputs;
  std::vector<double> expected;
};

Case makeCase(int world, size_t count, DataType type, Op op) {
  Case c;
  for (int r = 0; r < world; ++r) {
    TypedBuffer b(type, count);
    for (size_t i = 0; i < count; ++i) b.set(i, inputValue(type, op, r, i));
    c.inputs.push_back(std::move(b));
  }
  if (op != Op::Local) {
    c.expected.resize(count);
    std::vector<double> column(static_cast<size_t>(world));
    for (size_t i = 0; i < count; ++i) {
      for (int r = 0; r < world; ++r)
        column[static_cast<size_t>(r)] = c.inputs[static_cast<size_t>(r)].get(i);
      c.expected[i] = naiveReduce(type, op, column);
    }
  }
  return c;
}

// Reports the first mismatching element only (a large buffer would print a million lines).
void expectElements(const TypedBuffer& got, size_t begin, size_t n,
                    const std::function<double(size_t)>& want, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    const double g = got.get(begin + i);
    const double w = want(i);
    if (!close(got.type, g, w)) {
      ADD_FAILURE() << what << ": element " << begin + i << " is " << g << ", expected " << w;
      return;
    }
  }
}

class AllReduceTest : public ::testing::TestWithParam<ReduceParam> {};

// Even ranks reduce in place, odd ranks out of place: both forms in every group.
TEST_P(AllReduceTest, MatchesNaiveReference) {
  const auto [backend, world, count, type, op] = GetParam();
  Case c = makeCase(world, count, type, op);
  std::vector<TypedBuffer> outputs(static_cast<size_t>(world));
  std::vector<TypedBuffer> inputs = c.inputs;
  runWorld(backend, world, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    AllReduceOptions o;
    o.op = op;
    if (r % 2 == 0) {
      comm.allReduceSync(inputs[r].view(), o);
      outputs[r] = inputs[r];
    } else {
      outputs[r] = TypedBuffer(type, count);
      comm.allReduceSync(inputs[r].view(), outputs[r].view(), o);
    }
  });
  for (int r = 0; r < world; ++r) {
    const auto& out = outputs[static_cast<size_t>(r)];
    ASSERT_EQ(out.count(), count);
    const auto& own = c.inputs[static_cast<size_t>(r)];
    expectElements(
        out, 0, count, [&](size_t i) { return op == Op::Local ? own.get(i) : c.expected[i]; },
        "rank " + std::to_string(r));
  }
}

INSTANTIATE_TEST_SUITE_P(All, AllReduceTest,
                         ::testing::Combine(::testing::ValuesIn(threadBackends()),
                                            ::testing::ValuesIn(kWorldSizes),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(allCollectiveOperators)),
                         reduceParamName);

class ReduceScatterTest : public ::testing::TestWithParam<ReduceParam> {};

// Rank r holds elements [r*s, (r+1)*s) of the reduction, s = ceil(n/k), zero past n. Even ranks in
// place.
TEST_P(ReduceScatterTest, ShardsMatchNaiveReference) {
  const auto [backend, world, count, type, op] = GetParam();
  Case c = makeCase(world, count, type, op);
  const size_t s = shardCount(count, static_cast<size_t>(world));
  std::vector<TypedBuffer> outputs(static_cast<size_t>(world));
  std::vector<TypedBuffer> inputs = c.inputs;
  runWorld(backend, world, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    ReduceScatterOptions o;
    o.op = op;
    if (r % 2 == 0) {
      comm.reduceScatterSync(inputs[r].view(), o);
      outputs[r] = TypedBuffer(type, s);
      if (s > 0)
        std::memcpy(outputs[r].bytes.data(), inputs[r].bytes.data(), outputs[r].bytes.size());
    } else {
      outputs[r] = TypedBuffer(type, s);
      // Poison the output: padding must be written as zeros, not left alone.
      std::fill(outputs[r].bytes.begin(), outputs[r].bytes.end(), 0x5A);
      comm.reduceScatterSync(inputs[r].view(), outputs[r].view(), o);
    }
  });
  for (int r = 0; r < world; ++r) {
    const auto& out = outputs[static_cast<size_t>(r)];
    const auto& own = c.inputs[static_cast<size_t>(r)];
    const size_t begin = static_cast<size_t>(r) * s;
    expectElements(
        out, 0, s,
        [&](size_t i) {
          const size_t g = begin + i;
          if (g >= count) return 0.0;
          return op == Op::Local ? own.get(g) : c.expected[g];
        },
        "rank " + std::to_string(r));
  }
}

INSTANTIATE_TEST_SUITE_P(All, ReduceScatterTest,
                         ::testing::Combine(::testing::ValuesIn(threadBackends()),
                                            ::testing::ValuesIn(kWorldSizes),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(allCollectiveOperators)),
                         reduceParamName);

using CopyParam = std::tuple<std::string, int, size_t, DataType>;

std::string copyParamName(const ::testing::TestParamInfo<CopyParam>& info) {
  const auto& [backend, world, count, type] = info.param;
  return backend + "_n" + std::to_string(world) + "_c" + std::to_string(count) + "_" +
         typeName(type);
}

class AllGatherTest : public ::testing::TestWithParam<CopyParam> {};

// The inverse of reduce-scatter: n output elements from shards of ceil(n/k); even ranks in place.
TEST_P(AllGatherTest, ConcatenatesShardsDroppingPadding) {
  const auto [backend, world, count, type] = GetParam();
  const size_t s = shardCount(count, static_cast<size_t>(world));
  auto shardValue = [&](size_t r, size_t i) {
    return inputValue(type, Op::Add, static_cast<int>(r), i);
  };
  std::vector<TypedBuffer> outputs(static_cast<size_t>(world));
  runWorld(backend, world, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    if (r % 2 == 0) {
      TypedBuffer buf(type, count);
      for (size_t i = 0; i < count; ++i) buf.set(i, i < s ? shardValue(r, i) : 99);
      comm.allGatherSync(buf.view());
      outputs[r] = std::move(buf);
    } else {
      TypedBuffer in(type, s);
      for (size_t i = 0; i < s; ++i) in.set(i, shardValue(r, i));
      outputs[r] = TypedBuffer(type, count);
      comm.allGatherSync(in.view(), outputs[r].view());
    }
  });
  for (int r = 0; r < world; ++r) {
    expectElements(
        outputs[static_cast<size_t>(r)], 0, count,
        [&](size_t g) { return shardValue(g / s, g % s); }, "rank " + std::to_string(r));
  }
}

INSTANTIATE_TEST_SUITE_P(All, AllGatherTest,
                         ::testing::Combine(::testing::ValuesIn(threadBackends()),
                                            ::testing::ValuesIn(kWorldSizes),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::ValuesIn(kTypes)),
                         copyParamName);

class BroadcastTest : public ::testing::TestWithParam<CopyParam> {};

// Every root in turn; even ranks in place, odd ranks out of place (with an empty input off the
// root).
TEST_P(BroadcastTest, EveryRankGetsTheRootsBuffer) {
  const auto [backend, world, count, type] = GetParam();
  for (int root = 0; root < world; ++root) {
    std::vector<TypedBuffer> outputs(static_cast<size_t>(world));
    runWorld(backend, world, [&](Communicator& comm) {
      const int r = comm.rank();
      TypedBuffer mine(type, count);
      for (size_t i = 0; i < count; ++i) mine.set(i, inputValue(type, Op::Add, r, i));
      BroadcastOptions o;
      o.root = root;
      if (r % 2 == 0) {
        comm.broadcastSync(mine.view(), o);
        outputs[static_cast<size_t>(r)] = std::move(mine);
      } else {
        TypedBuffer out(type, count);
        comm.broadcastSync(r == root ? mine.view() : BufferView{nullptr, 0, type}, out.view(), o);
        outputs[static_cast<size_t>(r)] = std::move(out);
      }
    });
    for (int r = 0; r < world; ++r) {
      expectElements(
          outputs[static_cast<size_t>(r)], 0, count,
          [&](size_t i) { return inputValue(type, Op::Add, root, i); },
          "root " + std::to_string(root) + " rank " + std::to_string(r));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, BroadcastTest,
                         ::testing::Combine(::testing::ValuesIn(threadBackends()),
                                            ::testing::ValuesIn(kWorldSizes),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::Values(DataType::FLOAT, DataType::FLOAT16,
                                                              DataType::INT64, DataType::UINT8)),
                         copyParamName);

class PerBackend : public ::testing::TestWithParam<std::string> {};

// docs/replication-semantics.md section 5: 30 elements over 4 ranks give shards of 8; the last
// holds 6 values and 2 zeros. All-gather of the shards restores the 30 elements.
TEST_P(PerBackend, ReduceScatterPaddingThirtyElementsOverFourRanks) {
  std::vector<std::vector<float>> shards(4);
  std::vector<std::vector<float>> gathered(4);
  runWorld(GetParam(), 4, [&](Communicator& comm) {
    std::vector<float> x(30);
    for (int i = 0; i < 30; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i + 1);
    std::vector<float> shard(8, -1.0f);
    comm.reduceScatterSync(viewOf(x.data(), 30, DataType::FLOAT),
                           viewOf(shard.data(), 8, DataType::FLOAT));
    std::vector<float> full(30);
    comm.allGatherSync(viewOf(shard.data(), 8, DataType::FLOAT),
                       viewOf(full.data(), 30, DataType::FLOAT));
    shards[static_cast<size_t>(comm.rank())] = shard;
    gathered[static_cast<size_t>(comm.rank())] = full;
  });
  for (size_t r = 0; r < 4; ++r) {
    for (size_t i = 0; i < 8; ++i) {
      const size_t g = r * 8 + i;
      EXPECT_EQ(shards[r][i], g < 30 ? 4.0f * static_cast<float>(g + 1) : 0.0f) << r << "," << i;
    }
    for (size_t g = 0; g < 30; ++g) EXPECT_EQ(gathered[r][g], 4.0f * static_cast<float>(g + 1));
  }
}

// More ranks than elements: shards of 1, the ranks past the data get a zero.
TEST_P(PerBackend, ReduceScatterPaddingFewerElementsThanRanks) {
  std::vector<int32_t> got(8, -1);
  runWorld(GetParam(), 8, [&](Communicator& comm) {
    std::vector<int32_t> x = {5, 6, 7};
    int32_t shard = -1;
    comm.reduceScatterSync(viewOf(x.data(), 3, DataType::INT32),
                           viewOf(&shard, 1, DataType::INT32));
    got[static_cast<size_t>(comm.rank())] = shard;
  });
  EXPECT_EQ(got, (std::vector<int32_t>{40, 48, 56, 0, 0, 0, 0, 0}));
}

TEST_P(PerBackend, ReduceScatterPaddingWrongOutputCountIsRejectedBeforeCommunicating) {
  const auto errors = runWorldCollectErrors(GetParam(), 4, [&](Communicator& comm) {
    std::vector<float> x(30), shard(7);
    comm.reduceScatterSync(viewOf(x.data(), 30, DataType::FLOAT),
                           viewOf(shard.data(), 7, DataType::FLOAT));
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("shards of 8 elements, but the output has 7"), std::string::npos) << e;
  }
}

// Section 9, case 1: two replicas all-reduce [0..9] with Sum: both hold 2*[0..9].
TEST_P(PerBackend, AcceptanceTwoReplicasAllReduceSum) {
  std::vector<std::vector<float>> got(2);
  runWorld(GetParam(), 2, [&](Communicator& comm) {
    std::vector<float> x(10);
    for (int i = 0; i < 10; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
    comm.allReduceSync(viewOf(x.data(), 10, DataType::FLOAT));
    got[static_cast<size_t>(comm.rank())] = x;
  });
  for (const auto& x : got) {
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(x[i], 2.0f * static_cast<float>(i));
  }
}

// Large out-of-place all-reduces (every rank out of place, above 8 MiB: the inproc backend writes
// the outputs with streaming stores) match the naive sum and agree bit for bit across ranks, with
// an element count that is not a multiple of any vector width. The sum is exact in rank order,
// which inproc and shm promise (gloo's rings add in another order).
TEST(RankOrderBackends, LargeOutOfPlaceFloatAllReduceMatchesNaiveSumOnEveryRank) {
  constexpr size_t kCount = (size_t{8} << 20) / sizeof(float) + 7;
  for (const std::string backend : {"inproc", "shm"}) {
    for (int world : {2, 3}) {
      SCOPED_TRACE(backend + " world " + std::to_string(world));
      std::vector<std::vector<float>> outputs(static_cast<size_t>(world));
      runWorld(backend, world, [&](Communicator& comm) {
        const auto r = static_cast<size_t>(comm.rank());
        std::vector<float> in(kCount);
        for (size_t i = 0; i < kCount; ++i)
          in[i] = static_cast<float>(i % 1000) * 0.001f + static_cast<float>(r + 1) * 0.1f;
        outputs[r].assign(kCount, -1.0f);
        for (Op op : {Op::Add, Op::Mean}) {
          AllReduceOptions o;
          o.op = op;
          comm.allReduceSync(viewOf(in.data(), kCount, DataType::FLOAT),
                             viewOf(outputs[r].data(), kCount, DataType::FLOAT), o);
          if (op == Op::Add) {
            for (size_t i = 0; i < kCount; ++i) {
              float want = static_cast<float>(i % 1000) * 0.001f + 0.1f;
              for (size_t p = 1; p < static_cast<size_t>(comm.size()); ++p)
                want = want +
                       (static_cast<float>(i % 1000) * 0.001f + static_cast<float>(p + 1) * 0.1f);
              if (outputs[r][i] != want) {
                ADD_FAILURE() << "rank " << r << " element " << i << ": " << outputs[r][i]
                              << " != " << want;
                break;
              }
            }
          }
        }
      });
      for (size_t r = 1; r < outputs.size(); ++r) {
        EXPECT_EQ(std::memcmp(outputs[r].data(), outputs[0].data(), kCount * sizeof(float)), 0)
            << "rank " << r << " differs from rank 0 (Mean)";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, PerBackend, ::testing::ValuesIn(threadBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace xtrain::comm
