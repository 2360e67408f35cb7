// Communicator::allocateShared and the shm backend's in-place all-reduce of buffers in that memory:
// only shm has it, the ranks' parts are separate, the results are bitwise those of the slot path
// (same slices, rank order), and ranks that disagree on the memory fail with a clear mismatch.
#include <cstring>

#include "comm_test_util.hpp"
#include "xtrain/format.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;
using Op = CollectiveOperator;

// Rank r's input at i: values whose float sum depends on the order of the additions.
float valueOf(size_t r, size_t i) {
  return static_cast<float>(i % 1000) * 0.001f + static_cast<float>(r + 1) * 0.1f +
         (r % 2 == 0 ? 1e7f : -1e7f) * static_cast<float>(i % 3 == 0);
}

TEST(SharedMemory, OnlyShmGroupsOfSeveralRanksHaveIt) {
  for (const std::string backend : {"inproc", "gloo"}) {
    runWorld(backend, 2,
             [&](Communicator& comm) { EXPECT_EQ(comm.allocateShared(4096), nullptr) << backend; });
  }
  runWorld("shm", 1, [](Communicator& comm) { EXPECT_EQ(comm.allocateShared(4096), nullptr); });
  runWorld("shm", 2, [](Communicator& comm) {
    const auto memory = comm.allocateShared(10000);
    ASSERT_NE(memory, nullptr);
    EXPECT_EQ(memory->bytes, 10000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(memory->data) % 4096, 0u);
    for (size_t i = 0; i < memory->bytes; ++i) ASSERT_EQ(memory->data[i], std::byte{0}) << i;
  });
  const auto errors =
      runWorldCollectErrors("shm", 2, [](Communicator& comm) { (void)comm.allocateShared(0); });
  for (const auto& e : errors) EXPECT_NE(e.find("0 bytes"), std::string::npos) << e;
}

TEST(SharedMemory, EachRankWritesItsOwnPart) {
  std::vector<std::vector<uint32_t>> seen(3);
  runWorld("shm", 3, [&](Communicator& comm) {
    const auto memory = comm.allocateShared(64 * sizeof(uint32_t));
    auto* words = reinterpret_cast<uint32_t*>(memory->data);
    for (size_t i = 0; i < 64; ++i) words[i] = static_cast<uint32_t>(comm.rank() * 1000 + i);
    comm.barrierSync();
    seen[static_cast<size_t>(comm.rank())].assign(words, words + 64);
  });
  for (size_t r = 0; r < 3; ++r) {
    for (size_t i = 0; i < 64; ++i) EXPECT_EQ(seen[r][i], r * 1000 + i);
  }
}

// In place in shared memory against out of place through the slots, for counts below and above
// the direct size and a slot, Add and Mean, FLOAT and FLOAT16, 2 and 3 ranks: the same bits.
TEST(SharedMemory, InPlaceAllReduceMatchesTheSlotPathBitwise) {
  for (int world : {2, 3}) {
    for (size_t count : {size_t{1}, size_t{1000}, size_t{5} << 20}) {
      for (DataType type : {DataType::FLOAT, DataType::FLOAT16}) {
        SCOPED_TRACE(format("world {} count {} {}", world, count, dataTypeName(type)));
        const size_t es = dataTypeSize(type);
        std::vector<std::vector<unsigned char>> shared(static_cast<size_t>(world));
        std::vector<std::vector<unsigned char>> slots(static_cast<size_t>(world));
        runWorld("shm", world, [&](Communicator& comm) {
          const auto r = static_cast<size_t>(comm.rank());
          const size_t offset = 64;  // a buffer that does not start the memory
          const auto memory = comm.allocateShared(offset + count * es);
          TypedBuffer in(type, count);
          for (size_t i = 0; i < count; ++i) in.set(i, valueOf(r, i));
          for (Op op : {Op::Add, Op::Mean}) {
            AllReduceOptions o;
            o.op = op;
            std::byte* buffer = memory->data + offset;
            std::memcpy(buffer, in.bytes.data(), count * es);
            comm.allReduceSync(viewOf(buffer, count, type), o);
            TypedBuffer out(type, count);
            comm.allReduceSync(in.view(), out.view(), o);
            shared[r].insert(shared[r].end(), reinterpret_cast<unsigned char*>(buffer),
                             reinterpret_cast<unsigned char*>(buffer) + count * es);
            slots[r].insert(slots[r].end(), out.bytes.begin(), out.bytes.end());
          }
        });
        for (size_t r = 0; r < shared.size(); ++r) {
          ASSERT_EQ(shared[r].size(), slots[r].size());
          EXPECT_EQ(std::memcmp(shared[r].data(), slots[r].data(), shared[r].size()), 0)
              << "rank " << r;
          EXPECT_EQ(shared[r], shared[0]) << "rank " << r;
        }
      }
    }
  }
}

TEST(SharedMemory, RanksThatReduceDifferentBuffersFailWithAMismatch) {
  const auto errors = runWorldCollectErrors("shm", 2, [](Communicator& comm) {
    const auto memory = comm.allocateShared(4096);
    std::vector<float> own(16, 1.0f);
    float* buffer = comm.rank() == 0 ? reinterpret_cast<float*>(memory->data) : own.data();
    comm.allReduceSync(viewOf(buffer, 16, DataType::FLOAT));
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("shared memory 1 at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("a buffer of its own"), std::string::npos) << e;
  }
}

TEST(SharedMemory, RanksThatAskForDifferentSizesGetAnError) {
  const auto errors = runWorldCollectErrors("shm", 2, [](Communicator& comm) {
    (void)comm.allocateShared(comm.rank() == 0 ? 4096 : 8192);
  });
  for (const auto& e : errors)
    EXPECT_NE(e.find("allocating shared memory 1"), std::string::npos) << e;
  EXPECT_NE(errors[1].find("expected 16384"), std::string::npos) << errors[1];
}

}  // namespace
}  // namespace xtrain::comm
