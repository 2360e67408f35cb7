// The gloo backend: every collective, operator and type against a naive reference on long-lived
// worlds (many collectives per connection), faults (mismatch, missing and late ranks, ranks that
// leave), splits, the bind-address environment variables, and ranks as processes (fork) over a
// FileStore, one of which is killed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "comm/backends/gloo/bind_address.hpp"
#include "comm/grouping.hpp"
#include "comm_test_util.hpp"
#include "testing/process_testing.hpp"

namespace xtrain::comm {
namespace {

using xtrain::testing::ScopedEnv;

using namespace testing;
using Op = CollectiveOperator;
using Clock = std::chrono::steady_clock;

const std::string kGloo = "gloo";
const std::vector<DataType> kTypes = {DataType::FLOAT, DataType::FLOAT16, DataType::INT32,
                                      DataType::INT64, DataType::UINT8};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string caseName(int world, size_t count, DataType type, Op op) {
  return "n" + std::to_string(world) + " c" + std::to_string(count) + " " + dataTypeName(type) +
         " " + toString(op);
}

// Checks got[begin + i] against want(i) for i < n; reports the first mismatch only.
bool expectElements(const TypedBuffer& got, size_t begin, size_t n,
                    const std::function<double(size_t)>& want, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    const double g = got.get(begin + i);
    const double w = want(i);
    if (!close(got.type, g, w)) {
      ADD_FAILURE() << what << ": element " << begin + i << " is " << g << ", expected " << w;
      return false;
    }
  }
  return true;
}

double expected(DataType type, Op op, int world, size_t i) {
  std::vector<double> column(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) column[static_cast<size_t>(r)] = inputValue(type, op, r, i);
  return naiveReduce(type, op, column);
}

TypedBuffer inputOf(DataType type, Op op, int rank, size_t count) {
  TypedBuffer b(type, count);
  for (size_t i = 0; i < count; ++i) b.set(i, inputValue(type, op, rank, i));
  return b;
}

// One world per size runs every (count, type, operator) in turn: all-reduce and reduce-scatter,
// even ranks in place, odd ranks out of place.
TEST(GlooCollectives, ReductionsMatchNaiveReference) {
  for (int world : {1, 2, 3, 4}) {
    runWorld(kGloo, world, [&](Communicator& comm) {
      const int r = comm.rank();
      for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{300007}}) {
        for (DataType type : kTypes) {
          for (Op op : allCollectiveOperators) {
            const std::string what =
                caseName(world, count, type, op) + " rank " + std::to_string(r);
            std::vector<double> want(count);
            for (size_t i = 0; i < count; ++i) {
              want[i] = op == Op::Local ? inputValue(type, op, r, i) : expected(type, op, world, i);
            }
            // All-reduce.
            TypedBuffer in = inputOf(type, op, r, count);
            TypedBuffer out(type, count);
            AllReduceOptions ao;
            ao.op = op;
            if (r % 2 == 0) {
              comm.allReduceSync(in.view(), ao);
              out = in;
            } else {
              comm.allReduceSync(in.view(), out.view(), ao);
            }
            if (!expectElements(
                    out, 0, count, [&](size_t i) { return want[i]; }, "allReduce " + what)) {
              return;
            }
            // Reduce-scatter.
            const size_t s = shardCount(count, static_cast<size_t>(world));
            const size_t begin = static_cast<size_t>(r) * s;
            TypedBuffer rin = inputOf(type, op, r, count);
            TypedBuffer shard(type, s);
            ReduceScatterOptions ro;
            ro.op = op;
            if (r % 2 == 0) {
              comm.reduceScatterSync(rin.view(), ro);
              if (s > 0) std::memcpy(shard.bytes.data(), rin.bytes.data(), shard.bytes.size());
            } else {
              std::fill(shard.bytes.begin(), shard.bytes.end(), 0x5A);
              comm.reduceScatterSync(rin.view(), shard.view(), ro);
            }
            if (!expectElements(
                    shard, 0, s,
                    [&](size_t i) {
                      const size_t g = begin + i;
                      if (g >= count) return 0.0;
                      return op == Op::Local ? inputValue(type, op, r, g) : want[g];
                    },
                    "reduceScatter " + what)) {
              return;
            }
          }
        }
      }
    });
  }
}

// An all-reduce of at most 64 KiB travels with its fingerprint and every rank reduces the k inputs
// itself (docs/comm-gloo.md): on both sides of that bound (16384 floats, 32768 FLOAT16) the result
// matches the reference, and every rank gets the same bits (sums whose order matters in float).
TEST(GlooCollectives, SmallAllReducesGiveEveryRankTheSameBits) {
  for (int world : {2, 3, 4}) {
    const auto K = static_cast<size_t>(world);
    for (DataType type : {DataType::FLOAT, DataType::FLOAT16}) {
      const size_t bound = (size_t{64} << 10) / dataTypeSize(type);
      for (size_t count : {size_t{3}, bound, bound + 1}) {
        for (Op op : {Op::Add, Op::Mean}) {
          std::vector<std::vector<uint8_t>> got(K);
          // Positive (no cancellation), exact in the buffer's type: sevenths as float, eighths as
          // FLOAT16 (whose sums then round once, at the end).
          auto value = [type](int rank, size_t i) {
            const auto n =
                static_cast<double>((i * 2654435761u + static_cast<size_t>(rank) * 97) % 1000 + 1);
            return type == DataType::FLOAT ? static_cast<double>(static_cast<float>(n / 7.0))
                                           : n / 8.0;
          };
          runWorld(kGloo, world, [&](Communicator& comm) {
            const int r = comm.rank();
            TypedBuffer in(type, count);
            for (size_t i = 0; i < count; ++i) in.set(i, value(r, i));
            AllReduceOptions o;
            o.op = op;
            comm.allReduceSync(in.view(), o);
            got[static_cast<size_t>(r)] = in.bytes;
          });
          const std::string what = caseName(world, count, type, op);
          TypedBuffer rank0(type, count);
          rank0.bytes = got[0];
          expectElements(
              rank0, 0, count,
              [&](size_t i) {
                double sum = 0;
                for (int p = 0; p < world; ++p) sum += value(p, i);
                return op == Op::Mean ? sum / world : sum;
              },
              what);
          for (size_t r = 1; r < K; ++r) {
            EXPECT_TRUE(got[r] == got[0]) << what << ": rank " << r << " differs from rank 0";
          }
        }
      }
    }
  }
}

// All-gather (padded and not, gloo's ring and ours) and broadcast from every root.
TEST(GlooCollectives, CopiesMatchNaiveReference) {
  for (int world : {1, 2, 3, 4}) {
    runWorld(kGloo, world, [&](Communicator& comm) {
      const int r = comm.rank();
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{600001}}) {
        for (DataType type :
             {DataType::FLOAT, DataType::FLOAT16, DataType::INT64, DataType::UINT8}) {
          const std::string what =
              caseName(world, count, type, Op::Add) + " rank " + std::to_string(r);
          const size_t s = shardCount(count, static_cast<size_t>(world));
          auto shardValue = [&](size_t p, size_t i) {
            return inputValue(type, Op::Add, static_cast<int>(p), i);
          };
          TypedBuffer out(type, count);
          if (r % 2 == 0) {
            for (size_t i = 0; i < count; ++i)
              out.set(i, i < s ? shardValue(static_cast<size_t>(r), i) : 99);
            comm.allGatherSync(out.view());
          } else {
            TypedBuffer in(type, s);
            for (size_t i = 0; i < s; ++i) in.set(i, shardValue(static_cast<size_t>(r), i));
            comm.allGatherSync(in.view(), out.view());
          }
          if (!expectElements(
                  out, 0, count, [&](size_t g) { return shardValue(g / s, g % s); },
                  "allGather " + what)) {
            return;
          }
          for (int root = 0; root < world; ++root) {
            TypedBuffer mine = inputOf(type, Op::Add, r, count);
            BroadcastOptions bo;
            bo.root = root;
            TypedBuffer got(type, count);
            if (r % 2 == 0) {
              comm.broadcastSync(mine.view(), bo);
              got = mine;
            } else {
              comm.broadcastSync(r == root ? mine.view() : BufferView{nullptr, 0, type}, got.view(),
                                 bo);
            }
            if (!expectElements(
                    got, 0, count, [&](size_t i) { return inputValue(type, Op::Add, root, i); },
                    "broadcast root " + std::to_string(root) + " " + what)) {
              return;
            }
          }
        }
      }
      comm.barrierSync();
    });
  }
}

TEST(GlooCollectives, EightRanksAndLocalTypes) {
  runWorld(kGloo, 8, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    std::vector<int32_t> x = {5, 6, 7};
    int32_t shard = -1;
    comm.reduceScatterSync(viewOf(x.data(), 3, DataType::INT32),
                           viewOf(&shard, 1, DataType::INT32));
    EXPECT_EQ(shard, r < 3 ? 8 * (5 + static_cast<int32_t>(r)) : 0) << r;
    std::vector<float> y(100003, 1.0f);
    comm.allReduceSync(viewOf(y.data(), y.size(), DataType::FLOAT));
    EXPECT_EQ(y.front(), 8.0f);
    EXPECT_EQ(y.back(), 8.0f);
    // Local and the copies accept any fixed-size type.
    bool flag = r == 3;
    AllReduceOptions local;
    local.op = Op::Local;
    comm.allReduceSync(viewOf(&flag, 1, DataType::BOOL), local);
    EXPECT_EQ(flag, r == 3);
    BroadcastOptions bo;
    bo.root = 3;
    comm.broadcastSync(viewOf(&flag, 1, DataType::BOOL), bo);
    EXPECT_TRUE(flag);
    std::vector<double> all(8);
    double mine = static_cast<double>(r) + 0.5;
    comm.allGatherSync(viewOf(&mine, 1, DataType::DOUBLE), viewOf(all.data(), 8, DataType::DOUBLE));
    for (size_t p = 0; p < 8; ++p) EXPECT_EQ(all[p], static_cast<double>(p) + 0.5);
  });
}

// Buffers of many ring segments (1 MiB each) per shard, so the rings' windows wrap many times:
// INT64 (exact) reduce-scatter and padded all-gather over 3 and 4 ranks, in place and not.
TEST(GlooCollectives, LargeBuffersSpanManySegments) {
  for (int world : {3, 4}) {
    runWorld(kGloo, world, [&](Communicator& comm) {
      const int r = comm.rank();
      const size_t count = 2'500'003;
      const size_t s = shardCount(count, static_cast<size_t>(world));
      auto value = [](int rank, size_t i) {
        return static_cast<int64_t>(i * 7 + static_cast<size_t>(rank) * 13) % 1000 - 500;
      };
      for (bool inPlace : {false, true}) {
        std::vector<int64_t> x(count);
        for (size_t i = 0; i < count; ++i) x[i] = value(r, i);
        std::vector<int64_t> shard(s, -1);
        if (inPlace) {
          comm.reduceScatterSync(viewOf(x.data(), count, DataType::INT64));
          std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(s), shard.begin());
        } else {
          comm.reduceScatterSync(viewOf(x.data(), count, DataType::INT64),
                                 viewOf(shard.data(), s, DataType::INT64));
        }
        for (size_t i = 0; i < s; ++i) {
          const size_t g = static_cast<size_t>(r) * s + i;
          int64_t want = 0;
          if (g < count) {
            for (int p = 0; p < world; ++p) want += value(p, g);
          }
          if (shard[i] != want) {
            ADD_FAILURE() << "reduceScatter n" << world << " rank " << r << " element " << i << ": "
                          << shard[i] << " != " << want;
            return;
          }
        }
        std::vector<int64_t> full(count, -7);
        if (inPlace) {
          std::copy(shard.begin(), shard.end(), full.begin());
          comm.allGatherSync(viewOf(full.data(), count, DataType::INT64));
        } else {
          comm.allGatherSync(viewOf(shard.data(), s, DataType::INT64),
                             viewOf(full.data(), count, DataType::INT64));
        }
        for (size_t g = 0; g < count; ++g) {
          int64_t want = 0;
          for (int p = 0; p < world; ++p) want += value(p, g);
          if (full[g] != want) {
            ADD_FAILURE() << "allGather n" << world << " rank " << r << " element " << g << ": "
                          << full[g] << " != " << want;
            return;
          }
        }
      }
    });
  }
}

// ---- faults

void expectMismatch(const std::function<void(Communicator&)>& fn,
                    const std::vector<std::string>& parts) {
  const auto start = Clock::now();
  const auto errors = runWorldCollectErrors(kGloo, 2, [&](Communicator& comm) {
    try {
      fn(comm);
    } catch (const CommMismatchError&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("wrong exception type: ") + e.what());
    }
  });
  EXPECT_LT(Clock::now() - start, 5s);
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_FALSE(errors[r].empty()) << "rank " << r << " did not raise";
    for (const auto& p : parts)
      EXPECT_TRUE(contains(errors[r], p)) << "rank " << r << ": " << errors[r];
  }
}

TEST(GlooFaults, MismatchesAreReportedOnEveryRank) {
  expectMismatch(
      [](Communicator& comm) {
        std::vector<float> x(12);
        comm.allReduceSync(viewOf(x.data(), comm.rank() == 0 ? 10 : 12, DataType::FLOAT));
      },
      {"collective mismatch in group 'world' (size 2)",
       "rank 0 called allReduce seq 0 (count=10, type=FLOAT, op=Add)",
       "rank 1 called allReduce seq 0 (count=12, type=FLOAT, op=Add)"});
  expectMismatch(
      [](Communicator& comm) {
        float x = 1;
        comm.barrierSync();
        if (comm.rank() == 0) {
          comm.allReduceSync(viewOf(&x, 1, DataType::FLOAT));
        } else {
          comm.broadcastSync(viewOf(&x, 1, DataType::FLOAT));
        }
      },
      {"allReduce seq 1", "broadcast seq 1 (count=1, type=FLOAT, root=0)"});
  expectMismatch(
      [](Communicator& comm) {
        float x = 1;
        BroadcastOptions o;
        o.root = comm.rank();
        comm.broadcastSync(viewOf(&x, 1, DataType::FLOAT), o);
      },
      {"root=0", "root=1"});
}

TEST(GlooFaults, CommunicatorIsUnusableAfterAMismatch) {
  const auto errors = runWorldCollectErrors(kGloo, 2, [](Communicator& comm) {
    float x[2] = {1, 2};
    EXPECT_THROW(comm.allReduceSync(viewOf(x, comm.rank() == 0 ? 1u : 2u, DataType::FLOAT)),
                 CommMismatchError);
    comm.barrierSync();
  });
  for (const auto& e : errors) {
    EXPECT_TRUE(contains(e, "cannot be used after an earlier failure")) << e;
    EXPECT_TRUE(contains(e, "collective mismatch")) << e;
  }
}

// Rank 2 closes its communicator: the others time out naming it, group, op and sequence.
TEST(GlooFaults, RankThatLeftIsNamedAsNotArrived) {
  const auto start = Clock::now();
  const auto errors = runWorldCollectErrors(
      kGloo, 3,
      [](Communicator& comm) {
        float x = 1;
        comm.barrierSync();
        if (comm.rank() == 2) return;
        AllReduceOptions o;
        o.debugName = "grad/w1";
        EXPECT_THROW(comm.allReduceSync(viewOf(&x, 1, DataType::FLOAT), o), CommTimeoutError);
        comm.allReduceSync(viewOf(&x, 1, DataType::FLOAT), o);
      },
      Milliseconds(300));
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_EQ(errors[2], "");
  for (int r = 0; r < 2; ++r) {
    const auto& e = errors[static_cast<size_t>(r)];
    for (const char* part :
         {"cannot be used after an earlier failure", "group 'world'", "allReduce seq 1",
          "'grad/w1'", "300 ms", "ranks [2] did not arrive"}) {
      EXPECT_TRUE(contains(e, part)) << "rank " << r << " lacks '" << part << "': " << e;
    }
  }
}

// A rank that never calls (but keeps its communicator) is named when the others time out; when it
// calls later it fails at once with the group's first failure.
TEST(GlooFaults, LateRankFailsFastAfterTheGroupTimedOut) {
  std::atomic<int64_t> lateMs{-1};
  const auto errors = runWorldCollectErrors(
      kGloo, 2,
      [&](Communicator& comm) {
        float x = 1;
        if (comm.rank() == 1) {
          std::this_thread::sleep_for(500ms);
          const auto t0 = Clock::now();
          try {
            comm.allReduceSync(viewOf(&x, 1, DataType::FLOAT));
          } catch (...) {
            lateMs = std::chrono::duration_cast<Milliseconds>(Clock::now() - t0).count();
            throw;
          }
          return;
        }
        comm.allReduceSync(viewOf(&x, 1, DataType::FLOAT));
      },
      Milliseconds(200));
  EXPECT_TRUE(contains(errors[0], "allReduce seq 0")) << errors[0];
  EXPECT_TRUE(contains(errors[0], "ranks [1] did not arrive")) << errors[0];
  EXPECT_TRUE(contains(errors[1], "cannot be used after an earlier failure")) << errors[1];
  EXPECT_TRUE(contains(errors[1], "ranks [1] did not arrive")) << errors[1];
  EXPECT_GE(lateMs.load(), 0);
  EXPECT_LT(lateMs.load(), 150);
}

TEST(GlooFaults, PerOperationTimeoutAndAsyncFailure) {
  const auto errors = runWorldCollectErrors(kGloo, 2, [](Communicator& comm) {
    if (comm.rank() == 1) {
      std::this_thread::sleep_for(1s);  // keeps its communicator, never calls
      return;
    }
    BarrierOptions o;
    o.timeout = Milliseconds(100);
    auto work = comm.barrier(o);
    const auto t0 = Clock::now();
    EXPECT_THROW(work->wait(), CommTimeoutError);
    EXPECT_LT(Clock::now() - t0, 900ms);
    EXPECT_TRUE(work->isCompleted());
    EXPECT_FALSE(work->isSuccess());
    try {
      work->wait();
      ADD_FAILURE() << "expected the failure again";
    } catch (const CommTimeoutError& e) {
      EXPECT_TRUE(contains(e.what(), "barrier seq 0")) << e.what();
      EXPECT_TRUE(contains(e.what(), "ranks [1] did not arrive")) << e.what();
    }
  });
  EXPECT_EQ(errors[0], "");
}

TEST(GlooAsync, ManyInFlightCompleteInIssueOrder) {
  runWorld(kGloo, 4, [](Communicator& comm) {
    constexpr int kOps = 24;
    std::vector<std::vector<int64_t>> bufs(kOps);
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < kOps; ++i) {
      auto& b = bufs[static_cast<size_t>(i)];
      b.assign(static_cast<size_t>(100 + 1000 * i), comm.rank() * 100 + i);
      if (i % 3 == 2) {
        works.push_back(comm.barrier());
      } else {
        works.push_back(comm.allReduce(viewOf(b.data(), b.size(), DataType::INT64)));
      }
    }
    for (int i = kOps - 1; i >= 0; --i) works[static_cast<size_t>(i)]->wait(Milliseconds(20000));
    for (int i = 0; i < kOps; ++i) {
      if (i % 3 == 2) continue;
      EXPECT_EQ(bufs[static_cast<size_t>(i)].front(), 600 + 4 * i);
      EXPECT_EQ(bufs[static_cast<size_t>(i)].back(), 600 + 4 * i);
    }
  });
}

TEST(GlooAsync, DestroyingTheCommunicatorFinishesIssuedWork) {
  auto store = std::make_shared<InMemoryStore>("drain", kTestTimeout);
  std::vector<float> x(2, 1.0f);
  std::vector<std::shared_ptr<Work>> works(2);
  const auto errors = runThreads(2, [&](int r) {
    auto comm = createCommunicator(CommConfig{store, r, 2, "world", kTestTimeout}, kGloo);
    works[static_cast<size_t>(r)] =
        comm->allReduce(viewOf(&x[static_cast<size_t>(r)], 1, DataType::FLOAT));
  });
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  for (auto& w : works) {
    EXPECT_TRUE(w->isCompleted());
    w->wait(Milliseconds(0));
  }
  EXPECT_EQ(x, (std::vector<float>{2.0f, 2.0f}));
}

// ---- creation

TEST(GlooCreation, MissingRankSizeDisagreementAndReusedName) {
  {
    auto store = std::make_shared<InMemoryStore>("create", Milliseconds(200));
    const auto errors = runThreads(2, [&](int r) {
      (void)createCommunicator(CommConfig{store, r, 3, "world", Milliseconds(200)}, kGloo);
    });
    for (const auto& e : errors) {
      EXPECT_TRUE(contains(e, "creation of group 'world'")) << e;
      EXPECT_TRUE(contains(e, "ranks [2] did not arrive")) << e;
    }
  }
  {
    auto store = std::make_shared<InMemoryStore>("sizes", Milliseconds(300));
    const auto errors = runThreads(2, [&](int r) {
      (void)createCommunicator(CommConfig{store, r, r == 0 ? 2 : 3, "world", Milliseconds(300)},
                               kGloo);
    });
    EXPECT_TRUE(contains(errors[0], "ranks [1] did not arrive")) << errors[0];
    EXPECT_TRUE(contains(errors[1], "with size 3, but rank 0 created it with size 2")) << errors[1];
  }
  {
    auto store = std::make_shared<InMemoryStore>();
    auto first = createCommunicator(CommConfig{store, 0, 1, "w", {}}, kGloo);
    try {
      (void)createCommunicator(CommConfig{store, 0, 1, "w", {}}, kGloo);
      FAIL() << "expected an error for a reused name";
    } catch (const error& e) {
      EXPECT_TRUE(contains(e.what(), "already created")) << e.what();
    }
  }
}

// A member that arrives and then never connects (it stopped, or its host went away): the
// creation fails within the arrival's timeout plus one more for connecting, not one per phase.
TEST(GlooCreation, AMemberThatArrivesButNeverConnectsFailsItWithinTwoTimeouts) {
  auto store = std::make_shared<InMemoryStore>("arrives", Milliseconds(600));
  // Rank 1's arrival, as group.cpp's meet() writes it, and nothing more.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  store->set("gloo/world/arrive/1", std::string("2 ") + host);
  const auto start = Clock::now();
  try {
    (void)createCommunicator(CommConfig{store, 0, 2, "world", Milliseconds(600)}, kGloo);
    FAIL() << "expected the creation to fail";
  } catch (const std::exception& e) {
    EXPECT_TRUE(contains(e.what(), "creation of group 'world'")) << e.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2 * 600 + 1000));
}

// Two jobs (stores) and two groups of one store never meet.
TEST(GlooCreation, GroupsAndJobsHaveTheirOwnKeys) {
  auto store = std::make_shared<InMemoryStore>("two", kTestTimeout);
  const auto errors = runThreads(4, [&](int t) {
    const std::string name = t < 2 ? "a" : "b";
    auto comm = createCommunicator(CommConfig{store, t % 2, 2, name, kTestTimeout}, kGloo);
    int64_t v = t;
    comm->allReduceSync(viewOf(&v, 1, DataType::INT64));
    EXPECT_EQ(v, t < 2 ? 1 : 5);
  });
  EXPECT_EQ(errors, (std::vector<std::string>(4, "")));
}

TEST(GlooCreation, BindAddressFromTheEnvironment) {
  auto allReduceOnce = [](const std::string& job) {
    return runWorldCollectErrors(kGloo, 2, [](Communicator& comm) {
      int32_t v = 1;
      comm.allReduceSync(viewOf(&v, 1, DataType::INT32));
      EXPECT_EQ(v, 2);
    });
    (void)job;
  };
  {
    ScopedEnv env("XTRAIN_GLOO_IFNAME", "lo");
    EXPECT_EQ(allReduceOnce("lo"), (std::vector<std::string>{"", ""}));
  }
  {
    ScopedEnv env("XTRAIN_GLOO_HOSTNAME", "127.0.0.1");
    EXPECT_EQ(allReduceOnce("host"), (std::vector<std::string>{"", ""}));
  }
  {
    ScopedEnv env("XTRAIN_GLOO_IFNAME", "nosuchif0");
    const auto errors = allReduceOnce("bad");
    for (const auto& e : errors) {
      EXPECT_TRUE(contains(e, "nosuchif0")) << e;
      EXPECT_TRUE(contains(e, "XTRAIN_GLOO_IFNAME")) << e;
    }
  }
}

// An unresolvable XTRAIN_GLOO_HOSTNAME crashed the process inside libgloo (CreateDevice
// dereferenced the failed lookup). Now every rank fails creation with an error naming the variable
// and the name; so do a name of another host and an interface that does not exist.
TEST(GlooCreation, BadBindAddressesAreErrorsNotCrashes) {
  const std::pair<const char*, const char*> cases[] = {
      {"XTRAIN_GLOO_HOSTNAME", "nosuchhost.invalid"},
      {"XTRAIN_GLOO_HOSTNAME", "192.0.2.1"},  // TEST-NET-1: never an address of this host
      {"XTRAIN_GLOO_IFNAME", "nosuchif0"},
  };
  for (const auto& [name, value] : cases) {
    SCOPED_TRACE(std::string(name) + "=" + value);
    ScopedEnv env(name, value);
    const auto errors = runWorldCollectErrors(kGloo, 2, [](Communicator& comm) {
      int32_t v = 1;
      comm.allReduceSync(viewOf(&v, 1, DataType::INT32));
    });
    for (const auto& e : errors) {
      EXPECT_TRUE(contains(e, name)) << e;
      EXPECT_TRUE(contains(e, value)) << e;
    }
  }
}

// The checks throw xtrain::error (bad input: tools exit 2), not a runtime failure.
TEST(GlooCreation, BindAddressChecksThrowInputErrors) {
  EXPECT_NO_THROW(gloo::checkHostname("127.0.0.1", "XTRAIN_GLOO_HOSTNAME"));
  EXPECT_NO_THROW(gloo::checkHostname("localhost", "XTRAIN_GLOO_HOSTNAME"));
  EXPECT_NO_THROW(gloo::checkInterface("lo"));
  for (const char* bad : {"nosuchhost.invalid", "", "999.1.1.1", "192.0.2.1"}) {
    try {
      gloo::checkHostname(bad, "XTRAIN_GLOO_HOSTNAME");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const runtime_error& e) {
      ADD_FAILURE() << "a runtime error for '" << bad << "': " << e.what();
    } catch (const error& e) {
      EXPECT_TRUE(contains(e.what(), std::string("'") + bad + "'")) << e.what();
    }
  }
  try {
    gloo::checkInterface("nosuchif0");
    ADD_FAILURE() << "nosuchif0 was accepted";
  } catch (const error& e) {
    EXPECT_TRUE(contains(e.what(), "XTRAIN_GLOO_IFNAME=nosuchif0")) << e.what();
    EXPECT_TRUE(contains(e.what(), "lo")) << e.what();  // the interfaces this host has
  }
}

// ---- splits

TEST(GlooSplit, GroupsReduceInsideThemselvesAndNest) {
  runWorld(kGloo, 8, [&](Communicator& world) {
    const int r = world.rank();
    auto half = splitByCommGroup(world, {CommGroupType::Consecutive, 4}, "half");
    auto ortho = splitByCommGroup(world, {CommGroupType::Orthogonal, 2}, "ortho");
    auto quarter = splitByCommGroup(*half.comm, {CommGroupType::Consecutive, 2}, "quarter");
    EXPECT_EQ(quarter.comm->name(), "world/half." + std::to_string(half.group) + "/quarter." +
                                        std::to_string(quarter.group));
    int64_t a = r + 1;
    half.comm->allReduceSync(viewOf(&a, 1, DataType::INT64));
    EXPECT_EQ(a, r < 4 ? 10 : 26);
    int64_t b = r + 1;
    ortho.comm->allReduceSync(viewOf(&b, 1, DataType::INT64));
    EXPECT_EQ(b, 2 * (r % 4) + 2 + 4);
    int32_t c = 1;
    quarter.comm->allReduceSync(viewOf(&c, 1, DataType::INT32));
    EXPECT_EQ(c, 2);
    // The same split again: a fresh, independent group; the parent still works.
    auto again = splitByCommGroup(world, {CommGroupType::Consecutive, 4}, "half");
    int32_t w = 1;
    again.comm->allReduceSync(viewOf(&w, 1, DataType::INT32));
    EXPECT_EQ(w, 4);
    int32_t all = 1;
    world.allReduceSync(viewOf(&all, 1, DataType::INT32));
    EXPECT_EQ(all, 8);
    auto single = world.split({r}, "self");
    float f = 3;
    single->allReduceSync(viewOf(&f, 1, DataType::FLOAT));
    EXPECT_EQ(f, 3.0f);
  });
}

TEST(GlooSplit, DisagreeingMembersTimeOut) {
  const auto errors = runWorldCollectErrors(
      kGloo, 2,
      [&](Communicator& world) {
        (void)world.split(world.rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0},
                          "pair");
      },
      Milliseconds(200));
  for (const auto& e : errors) {
    EXPECT_TRUE(contains(e, "split of group 'world' into 'pair'")) << e;
    EXPECT_TRUE(contains(e, "did not arrive")) << e;
  }
}

// ---- ranks as processes

// Runs fn(rank) in `size` forked processes over a FileStore in a private temporary directory. Each
// child writes "OK" or "ERR <message>" to its result file and exits; the parent kills every child
// still running when it leaves (every path).
class Processes {
 public:
  Processes(int size, const std::string& job) : size_(size), job_(job) {
    char tmpl[] = "/tmp/xtrain-gloo-test-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = d;
  }
  ~Processes() {
    for (pid_t pid : pids_) {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::shared_ptr<FileStore> store(Milliseconds timeout) const {
    return std::make_shared<FileStore>(dir_, job_, timeout);
  }

  void start(const std::function<void(int)>& fn) {
    std::cout.flush();
    std::cerr.flush();
    for (int r = 0; r < size_; ++r) {
      const pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        std::string result;
        try {
          fn(r);
          result = "OK";
        } catch (const std::exception& e) {
          result = std::string("ERR ") + e.what();
        } catch (...) {
          result = "ERR (unknown exception)";
        }
        const auto path = resultPath(r);
        {
          std::ofstream out(path.string() + ".tmp");
          out << result;
        }
        std::filesystem::rename(path.string() + ".tmp", path);
        ::_exit(0);
      }
      pids_.push_back(pid);
    }
  }

  void kill(int r) {
    auto& pid = pids_[static_cast<size_t>(r)];
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }

  // Waits (bounded) for the listed children to exit; returns false on timeout.
  bool waitFor(const std::vector<int>& ranks, Milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (int r : ranks) {
      auto& pid = pids_[static_cast<size_t>(r)];
      while (pid > 0) {
        if (::waitpid(pid, nullptr, WNOHANG) == pid) {
          pid = -1;
          break;
        }
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(10ms);
      }
    }
    return true;
  }

  std::string result(int r) const {
    std::ifstream in(resultPath(r));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::filesystem::path resultPath(int r) const {
    return std::filesystem::path(dir_) / ("result." + std::to_string(r));
  }

  int size_;
  std::string job_;
  std::string dir_;
  std::vector<pid_t> pids_;
};

TEST(GlooProcesses, CollectivesAcrossProcesses) {
  Processes procs(3, "ok");
  procs.start([&](int r) {
    auto comm = createCommunicator(CommConfig{procs.store(20s), r, 3, "world", 20s}, kGloo);
    std::vector<float> x(1 << 18, static_cast<float>(r + 1));
    comm->allReduceSync(viewOf(x.data(), x.size(), DataType::FLOAT));
    if (x.front() != 6.0f || x.back() != 6.0f) throw std::runtime_error("wrong all-reduce result");
    std::vector<int32_t> shard(3);
    std::vector<int32_t> y = {1, 2, 3, 4, 5, 6, 7};
    comm->reduceScatterSync(viewOf(y.data(), 7, DataType::INT32),
                            viewOf(shard.data(), 3, DataType::INT32));
    const std::vector<std::vector<int32_t>> want = {{3, 6, 9}, {12, 15, 18}, {21, 0, 0}};
    if (shard != want[static_cast<size_t>(r)]) throw std::runtime_error("wrong shard");
    comm->barrierSync();
  });
  ASSERT_TRUE(procs.waitFor({0, 1, 2}, 30s)) << "children did not finish";
  for (int r = 0; r < 3; ++r) EXPECT_EQ(procs.result(r), "OK") << "rank " << r;
}

// Rank `victim` of a gloo group of `world` processes is killed (SIGKILL) while every rank runs
// `op` back to back with a 60 s timeout: every survivor fails within seconds (not at the timeout),
// naming the dead rank, whatever phase it was in (fingerprint exchange, a ring step, a tree step)
// and whether or not it was connected to the dead rank in that step.
void expectKilledPeerNamed(const std::string& job, int world, int victim,
                           const std::function<void(Communicator&, int)>& op) {
  Processes procs(world, job);
  procs.start([&](int r) {
    auto store = procs.store(20s);
    auto comm = createCommunicator(CommConfig{store, r, world, "world", 60s}, kGloo);
    const auto end = Clock::now() + 30s;
    for (int i = 0; Clock::now() < end; ++i) {
      op(*comm, i);
      if (i == 0) store->set("ready/" + std::to_string(r), "1");
    }
    throw std::runtime_error("still running after 30 s");
  });
  auto store = procs.store(20s);
  std::vector<std::string> ready;
  std::vector<int> survivors;
  for (int r = 0; r < world; ++r) {
    ready.push_back("ready/" + std::to_string(r));
    if (r != victim) survivors.push_back(r);
  }
  ASSERT_NO_THROW(store->wait(ready, 20s));
  procs.kill(victim);
  const auto t0 = Clock::now();
  ASSERT_TRUE(procs.waitFor(survivors, 15s)) << "survivors did not notice the dead peer";
  const auto elapsed = Clock::now() - t0;
  EXPECT_LT(elapsed, 5s);
  const std::string lost = "peer connection lost to rank " + std::to_string(victim);
  for (int r : survivors) {
    const std::string e = procs.result(r);
    EXPECT_TRUE(contains(e, "ERR ")) << "rank " << r << ": " << e;
    EXPECT_TRUE(contains(e, "group 'world'")) << "rank " << r << ": " << e;
    EXPECT_TRUE(contains(e, lost)) << "rank " << r << ": " << e;
  }
}

TEST(GlooProcesses, KilledPeerIsDetectedAndNamed) {
  std::vector<float> x(10000, 1.0f);
  expectKilledPeerNamed("kill", 3, 2, [&](Communicator& comm, int) {
    comm.allReduceSync(viewOf(x.data(), x.size(), DataType::FLOAT));
    std::this_thread::sleep_for(2ms);
  });
}

// Large messages (a kill during a transfer) and 4 ranks: rank 0 is never the dead rank's
// neighbour in the rings.
TEST(GlooProcesses, KilledPeerDuringLargeAllReduce) {
  std::vector<float> x(1 << 20, 1.0f);
  expectKilledPeerNamed("kill-ar", 4, 2, [&](Communicator& comm, int) {
    comm.allReduceSync(viewOf(x.data(), x.size(), DataType::FLOAT));
  });
}

TEST(GlooProcesses, KilledPeerDuringReduceScatter) {
  std::vector<float> x(1 << 20, 1.0f);
  std::vector<float> shard(shardCount(x.size(), 4));
  expectKilledPeerNamed("kill-rs", 4, 2, [&](Communicator& comm, int) {
    comm.reduceScatterSync(viewOf(x.data(), x.size(), DataType::FLOAT),
                           viewOf(shard.data(), shard.size(), DataType::FLOAT));
  });
}

// Padded all-gathers and broadcasts from every root, the dead rank's included.
TEST(GlooProcesses, KilledPeerDuringAllGatherAndBroadcast) {
  const size_t count = (size_t{1} << 20) - 3;
  std::vector<float> out(count, 1.0f);
  std::vector<float> shard(shardCount(count, 4), 2.0f);
  expectKilledPeerNamed("kill-ag", 4, 1, [&](Communicator& comm, int i) {
    comm.allGatherSync(viewOf(shard.data(), shard.size(), DataType::FLOAT),
                       viewOf(out.data(), count, DataType::FLOAT));
    BroadcastOptions o;
    o.root = i % 4;
    comm.broadcastSync(viewOf(out.data(), count, DataType::FLOAT), o);
  });
}

// Barriers are the fingerprint exchange alone.
TEST(GlooProcesses, KilledPeerDuringBarriers) {
  expectKilledPeerNamed("kill-barrier", 4, 3, [&](Communicator& comm, int) { comm.barrierSync(); });
}

// Not a benchmark (see xbench comm): prints the gloo all-reduce and reduce-scatter bandwidth.
TEST(GlooThroughput, AllReduceAndReduceScatter) {
  for (int world : {2, 4}) {
    std::vector<double> lat(static_cast<size_t>(world));
    runWorld(kGloo, world, [&](Communicator& comm) {
      float v = 1;
      comm.barrierSync();
      constexpr int kIters = 200;
      const auto t0 = Clock::now();
      for (int i = 0; i < kIters; ++i) comm.allReduceSync(viewOf(&v, 1, DataType::FLOAT));
      lat[static_cast<size_t>(comm.rank())] =
          std::chrono::duration<double>(Clock::now() - t0).count() / kIters;
    });
    std::cout << "gloo " << world << " ranks, 4-byte allReduce latency "
              << *std::max_element(lat.begin(), lat.end()) * 1e6 << " us\n";
  }
  for (int world : {2, 4}) {
    for (size_t bytes : {size_t{4} << 20, size_t{64} << 20}) {
      const size_t count = bytes / 4;
      std::vector<double> ar(static_cast<size_t>(world)), rs(static_cast<size_t>(world));
      runWorld(kGloo, world, [&](Communicator& comm) {
        std::vector<float> x(count, 1.0f);
        std::vector<float> shard(shardCount(count, static_cast<size_t>(world)));
        comm.allReduceSync(viewOf(x.data(), count, DataType::FLOAT));  // warm-up
        EXPECT_EQ(x[count - 1], static_cast<float>(world));
        std::fill(x.begin(), x.end(), 0.0f);
        comm.barrierSync();
        const int iters = bytes > (size_t{8} << 20) ? 3 : 10;
        auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i)
          comm.allReduceSync(viewOf(x.data(), count, DataType::FLOAT));
        ar[static_cast<size_t>(comm.rank())] =
            std::chrono::duration<double>(Clock::now() - t0).count() / iters;
        comm.barrierSync();
        t0 = Clock::now();
        for (int i = 0; i < iters; ++i) {
          comm.reduceScatterSync(viewOf(x.data(), count, DataType::FLOAT),
                                 viewOf(shard.data(), shard.size(), DataType::FLOAT));
        }
        rs[static_cast<size_t>(comm.rank())] =
            std::chrono::duration<double>(Clock::now() - t0).count() / iters;
        EXPECT_EQ(shard.back(), 0.0f);
      });
      const double tAr = *std::max_element(ar.begin(), ar.end());
      const double tRs = *std::max_element(rs.begin(), rs.end());
      const double n = world;
      std::cout << "gloo " << world << " ranks, " << (bytes >> 20) << " MB FLOAT Add: allReduce "
                << tAr * 1e3 << " ms, busbw "
                << static_cast<double>(bytes) / tAr / 1e9 * 2 * (n - 1) / n
                << " GB/s; reduceScatter " << tRs * 1e3 << " ms, busbw "
                << static_cast<double>(bytes) / tRs / 1e9 * (n - 1) / n << " GB/s\n";
    }
  }
}

}  // namespace
}  // namespace xtrain::comm
