// The shm backend's single-copy all-reduce (process_vm_readv from the peers' buffers): the probe
// refuses what it cannot read, a group falls back to the shared segment's slots when any rank
// cannot or will not read its peers, and both paths give bitwise the same results.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "comm/backends/shm/peer_memory.hpp"
#include "comm_test_util.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;
using Op = CollectiveOperator;

// Sets the single-copy policy for the groups created in its scope.
class SingleCopyPolicy {
 public:
  explicit SingleCopyPolicy(std::function<bool(int)> p)
      : previous_(shm::setSingleCopyPolicyForTesting(std::move(p))) {}
  ~SingleCopyPolicy() { shm::setSingleCopyPolicyForTesting(std::move(previous_)); }
  SingleCopyPolicy(const SingleCopyPolicy&) = delete;
  SingleCopyPolicy& operator=(const SingleCopyPolicy&) = delete;

 private:
  std::function<bool(int)> previous_;
};

TEST(ShmPeerMemory, ProbeReadsThisProcessAndRefusesWhatItCannotRead) {
  const uint64_t word = 0x1234567890abcdefULL;
  const uint64_t other = 42;
  EXPECT_TRUE(shm::canReadPeer(::getpid(), &word, &word, sizeof word));
  EXPECT_FALSE(shm::canReadPeer(::getpid(), &word, &other, sizeof word)) << "value differs";
  EXPECT_FALSE(shm::canReadPeer(::getpid(), reinterpret_cast<const void*>(uintptr_t{4096}), &word,
                                sizeof word))
      << "unmapped address";
  EXPECT_FALSE(shm::canReadPeer(0, &word, &word, sizeof word));
  EXPECT_FALSE(shm::canReadPeer(-1, &word, &word, sizeof word));

  // A process that is gone: refused by the probe, reported as gone by readPeer.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(shm::canReadPeer(child, &word, &word, sizeof word));
  uint64_t got = 0;
  bool gone = false;
  EXPECT_FALSE(shm::readPeer(child, &word, &got, sizeof got, gone).empty());
  EXPECT_TRUE(gone);
}

TEST(ShmPeerMemory, ReadsAnotherProcessesMemoryWhereTheKernelAllowsIt) {
  // The child keeps a copy of `data` (copy-on-write after fork) at the same address; the parent
  // overwrites its own and reads the child's.
  std::vector<uint32_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i * 2654435761U);
  int ready[2];
  int done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c = 'r';
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::vector<uint32_t> want = data;
  std::fill(data.begin(), data.end(), 0U);
  std::vector<uint32_t> got(data.size());
  bool gone = false;
  const std::string why =
      shm::readPeer(child, data.data(), got.data(), got.size() * sizeof(uint32_t), gone);
  c = 'd';
  (void)!::write(done[1], &c, 1);
  ::waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  if (!why.empty() && !gone) GTEST_SKIP() << "the kernel refuses process_vm_readv here: " << why;
  ASSERT_EQ(why, "");
  EXPECT_EQ(got, want);
}

// Every rank's output of a FLOAT all-reduce of `count` elements (even ranks in place, odd ranks out
// of place), and how many peer reads the group made.
struct Outcome {
  std::vector<std::vector<char>> outputs;
  uint64_t peerReads = 0;
};

Outcome allReduceOnShm(int world, size_t count, DataType type, Op op) {
  const size_t es = dataTypeSize(type);
  Outcome o;
  o.outputs.resize(static_cast<size_t>(world));
  std::atomic<uint64_t> before{0};
  std::atomic<uint64_t> after{0};
  runWorld("shm", world, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    std::vector<char> in(count * es);
    for (size_t i = 0; i < count; ++i) {
      const double v = std::fmod(static_cast<double>(i) * 0.37 + static_cast<double>(r) * 1.3, 9.0);
      switch (type) {
        case DataType::FLOAT: {
          const auto f = static_cast<float>(v) * 0.001f + 0.1f;
          std::memcpy(&in[i * es], &f, es);
          break;
        }
        case DataType::INT32: {
          const auto x = static_cast<int32_t>(v * 1000.0) - 3000;
          std::memcpy(&in[i * es], &x, es);
          break;
        }
        default: FAIL() << "unsupported type in this test";
      }
    }
    comm.barrierSync();
    if (r == 0) before = shm::peerReadsSoFar();
    comm.barrierSync();
    AllReduceOptions options;
    options.op = op;
    std::vector<char>& out = o.outputs[r];
    if (r % 2 == 0) {
      comm.allReduceSync(viewOf(in.data(), count, type), options);
      out = in;
    } else {
      out.assign(count * es, '\x55');
      comm.allReduceSync(viewOf(in.data(), count, type), viewOf(out.data(), count, type), options);
    }
    comm.barrierSync();
    if (r == 0) after = shm::peerReadsSoFar();
  });
  o.peerReads = after - before;
  return o;
}

// Multi-round (the tests' shm slots are 64 KiB), not a multiple of any vector width.
constexpr size_t kCount = (size_t{300} << 10) / sizeof(float) + 13;

TEST(ShmSingleCopy, AllReducesMatchTheSlotPathBitForBit) {
  for (int world : {2, 3, 8}) {
    for (auto [type, op] :
         {std::pair{DataType::FLOAT, Op::Add}, std::pair{DataType::FLOAT, Op::Mean},
          std::pair{DataType::INT32, Op::Max}}) {
      SCOPED_TRACE(format("world {} {} {}", world, dataTypeName(type), toString(op)));
      Outcome slots;
      {
        SingleCopyPolicy off([](int) { return false; });
        slots = allReduceOnShm(world, kCount, type, op);
      }
      EXPECT_EQ(slots.peerReads, 0U);
      Outcome single;
      {
        SingleCopyPolicy on([](int) { return true; });
        single = allReduceOnShm(world, kCount, type, op);
      }
      EXPECT_GT(single.peerReads, 0U) << "the single-copy path did not run";
      for (size_t r = 0; r < slots.outputs.size(); ++r) {
        EXPECT_TRUE(slots.outputs[r] == slots.outputs[0]) << "slots: rank " << r << " differs";
        EXPECT_TRUE(single.outputs[r] == slots.outputs[0])
            << "single copy: rank " << r << " differs from the slot path";
      }
    }
  }
}

TEST(ShmSingleCopy, GroupFallsBackToSlotsWhenOneRankDeclines) {
  SingleCopyPolicy rank1Declines([](int rank) { return rank != 1; });
  const Outcome o = allReduceOnShm(3, kCount, DataType::FLOAT, Op::Add);
  EXPECT_EQ(o.peerReads, 0U) << "a rank that declined was read anyway";
  for (size_t r = 1; r < o.outputs.size(); ++r) EXPECT_TRUE(o.outputs[r] == o.outputs[0]);
  // Element 7 on every rank: the sum of the three ranks' inputs, in rank order.
  float want = 0.0f;
  for (int r = 0; r < 3; ++r) {
    want = want + (static_cast<float>(std::fmod(7 * 0.37 + r * 1.3, 9.0)) * 0.001f + 0.1f);
  }
  float got = 0.0f;
  std::memcpy(&got, &o.outputs[0][7 * sizeof(float)], sizeof got);
  EXPECT_EQ(got, want);
}

// Small all-reduces keep the slots even when single copy is on.
TEST(ShmSingleCopy, SmallAllReducesKeepTheSlots) {
  SingleCopyPolicy on([](int) { return true; });
  EXPECT_EQ(allReduceOnShm(2, 1001, DataType::FLOAT, Op::Add).peerReads, 0U);
}

}  // namespace
}  // namespace xtrain::comm
