// The program every rank (process) of the comm process tests runs: GoogleTest cases selected with
// --gtest_filter, each rank checking its own results against the naive reference. Under mpirun
// (mpi_process_test.cpp) the backend is mpi; started with xrun's environment (process_test.cpp) it
// is XTRAIN_COMM_BACKEND (shm, gloo) over the FileStore in XTRAIN_RENDEZVOUS_DIR. The job's exit
// code is non-zero when any rank fails. Not a ctest target of its own.
//
//   mpirun -np 4 xtrain_comm_worker --gtest_filter='Collectives.*'
//   mpirun -np 2 xtrain_comm_worker bench      (all-reduce timing, prints busbw)
//   mpirun -np 3 xtrain_comm_worker kill       (rank 1 SIGKILLs itself during collectives)
//   mpirun -np 2 xtrain_comm_worker stall      (rank 1 SIGSTOPs itself: the others time out)
//
// For xrun's hang report (tests/launcher/hang_report_test.cpp), over createWorldCommunicator() (so
// XTRAIN_COMM_TIMEOUT bounds each collective):
//   xrun -n 4 xtrain_comm_worker hang 2        (instance 2 SIGSTOPs itself before allReduce #12)
//   xrun -n 4 xtrain_comm_worker hang-join 2   (instance 2 SIGSTOPs itself before joining group
//                                               'late', which the others are creating)
//   xrun -n 3 xtrain_comm_worker mismatch      (instance 1 calls broadcast #12, the others
//                                               allReduce #12)
//   xrun -n 3 xtrain_comm_worker spin 3        (all-reduces for 3 s, printing "spinning" once)
//   xrun -n 3 xtrain_comm_worker fail 1 7      (instance 1 throws before allReduce #12 and exits
//                                               7; the others wait for it there)
#include <csignal>
#include <cstdio>
#include <thread>

#include "comm/agreement.hpp"
#include "comm/backends/mpi/mpi.hpp"
#include "comm/job.hpp"
#include "comm/world.hpp"
#include "comm_test_util.hpp"
#include "common/launch_environment.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;
using Op = CollectiveOperator;
using Clock = std::chrono::steady_clock;

const std::vector<DataType> kTypes = {DataType::FLOAT, DataType::FLOAT16, DataType::INT32,
                                      DataType::INT64, DataType::UINT8};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

mpi::LaunchInfo launch() {
  const LaunchEnvironment env = readLaunchEnvironment();
  return {env.instanceIndex, env.numInstances};
}

// The backend under test: XTRAIN_COMM_BACKEND, else mpi under mpirun.
std::string backend() {
  const char* b = std::getenv("XTRAIN_COMM_BACKEND");
  if (b != nullptr && *b != '\0' && std::string(b) != "auto") return b;
  return mpi::launchedByMpi() ? "mpi" : "shm";
}

// One store for the whole process (the mpi backend needs none).
std::shared_ptr<Store> jobStore() {
  static const std::shared_ptr<Store> store =
      backend() == "mpi" ? std::make_shared<InMemoryStore>("unused") : createJobStore(kTestTimeout);
  return store;
}

// Every rank calls world() in the same order, so the n-th call of each rank meets the others' n-th
// call in a key space of its own (names repeat across tests).
std::shared_ptr<Communicator> world(const std::string& name = "world",
                                    Milliseconds timeout = kTestTimeout) {
  static int calls = 0;
  const auto info = launch();
  auto store = std::make_shared<PrefixStore>(jobStore(), format("world-call-{}", calls++));
  return createCommunicator(CommConfig{store, info.rank, info.size, name, timeout}, backend());
}

// Inputs of every rank (each rank computes all of them, deterministically).
std::vector<TypedBuffer> inputsOf(int k, size_t count, DataType type, Op op) {
  std::vector<TypedBuffer> in;
  for (int r = 0; r < k; ++r) {
    TypedBuffer b(type, count);
    for (size_t i = 0; i < count; ++i) b.set(i, inputValue(type, op, r, i));
    in.push_back(std::move(b));
  }
  return in;
}

std::vector<double> expectedOf(const std::vector<TypedBuffer>& in, DataType type, Op op) {
  const size_t count = in.empty() ? 0 : in[0].count();
  std::vector<double> want(count);
  std::vector<double> column(in.size());
  for (size_t i = 0; i < count; ++i) {
    for (size_t r = 0; r < in.size(); ++r) column[r] = in[r].get(i);
    want[i] = naiveReduce(type, op, column);
  }
  return want;
}

// Reports the first wrong element only.
void expectElements(const TypedBuffer& got, size_t begin, size_t n,
                    const std::function<double(size_t)>& want, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    const double g = got.get(begin + i);
    const double w = want(i);
    if (!close(got.type, g, w)) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
      return;
    }
  }
}

std::string label(const char* op, int k, size_t count, DataType type, Op o, bool inPlace) {
  return format("{} n{} c{} {} {} {}", op, k, count, dataTypeName(type), toString(o),
                inPlace ? "in place" : "out of place");
}

TEST(Collectives, ReductionsMatchTheReference) {
  auto comm = world();
  const int k = comm->size();
  const int r = comm->rank();
  const size_t ks = static_cast<size_t>(k);
  const size_t rs = static_cast<size_t>(r);
  for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{65539}}) {
    for (DataType type : kTypes) {
      for (Op op : allCollectiveOperators) {
        const auto in = inputsOf(k, count, type, op);
        const auto want = op == Op::Local ? std::vector<double>{} : expectedOf(in, type, op);
        const TypedBuffer& mine = in[rs];
        auto expectReduced = [&](const TypedBuffer& got, size_t begin, size_t n,
                                 const std::string& what) {
          expectElements(
              got, 0, n,
              [&](size_t i) { return op == Op::Local ? mine.get(begin + i) : want[begin + i]; },
              what);
        };
        // all-reduce, out of place and in place
        {
          TypedBuffer input = mine;
          TypedBuffer output(type, count);
          comm->allReduceSync(input.view(), output.view(), {op, std::nullopt, ""});
          expectReduced(output, 0, count, label("allReduce", k, count, type, op, false));
          expectElements(
              input, 0, count, [&](size_t i) { return mine.get(i); }, "allReduce input untouched");
          TypedBuffer buffer = mine;
          comm->allReduceSync(buffer.view(), {op, std::nullopt, ""});
          expectReduced(buffer, 0, count, label("allReduce", k, count, type, op, true));
        }
        // reduce-scatter, out of place and in place; the padding is zero
        {
          const size_t s = shardCount(count, ks);
          const size_t begin = rs * s;
          const size_t valid = begin < count ? std::min(s, count - begin) : 0;
          TypedBuffer input = mine;
          TypedBuffer output(type, s);
          for (size_t i = 0; i < s; ++i) output.set(i, 7);  // the padding must be overwritten
          comm->reduceScatterSync(input.view(), output.view(), {op, std::nullopt, ""});
          const auto what = label("reduceScatter", k, count, type, op, false);
          expectReduced(output, begin, valid, what);
          for (size_t i = valid; i < s; ++i) EXPECT_EQ(output.get(i), 0.0) << what << " padding";
          TypedBuffer buffer = mine;
          comm->reduceScatterSync(buffer.view(), {op, std::nullopt, ""});
          const auto whatIn = label("reduceScatter", k, count, type, op, true);
          expectReduced(buffer, begin, valid, whatIn);
          for (size_t i = valid; i < s && i < count; ++i) {
            EXPECT_EQ(buffer.get(i), 0.0) << whatIn << " padding";
          }
        }
      }
    }
  }
}

TEST(Collectives, AllGatherAndBroadcast) {
  auto comm = world();
  const int k = comm->size();
  const size_t ks = static_cast<size_t>(k);
  const size_t rs = static_cast<size_t>(comm->rank());
  std::vector<DataType> types = kTypes;
  types.push_back(DataType::DOUBLE);
  types.push_back(DataType::INT16);
  for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{1001}, size_t{65539}}) {
    for (DataType type : types) {
      const size_t s = shardCount(count, ks);
      // The full tensor: element i is value(i); rank p holds elements [p*s, p*s+s), zero-padded.
      auto value = [](size_t i) { return static_cast<double>(i % 97); };
      auto shardOf = [&](size_t p) {
        TypedBuffer b(type, s);
        for (size_t i = 0; i < s; ++i) b.set(i, p * s + i < count ? value(p * s + i) : 0);
        return b;
      };
      auto get = [&](const TypedBuffer& b, size_t i) -> double {
        if (type == DataType::DOUBLE) {
          double v;
          std::memcpy(&v, b.bytes.data() + i * 8, 8);
          return v;
        }
        if (type == DataType::INT16) {
          int16_t v;
          std::memcpy(&v, b.bytes.data() + i * 2, 2);
          return v;
        }
        return b.get(i);
      };
      auto set = [&](TypedBuffer& b, size_t i, double x) {
        if (type == DataType::DOUBLE) {
          std::memcpy(b.bytes.data() + i * 8, &x, 8);
        } else if (type == DataType::INT16) {
          const auto v = static_cast<int16_t>(x);
          std::memcpy(b.bytes.data() + i * 2, &v, 2);
        } else {
          b.set(i, x);
        }
      };
      TypedBuffer input(type, s);
      for (size_t i = 0; i < s; ++i) set(input, i, rs * s + i < count ? value(rs * s + i) : 0);
      (void)shardOf;
      const std::string what = format("allGather n{} c{} {}", k, count, dataTypeName(type));
      TypedBuffer output(type, count);
      comm->allGatherSync(input.view(), output.view());
      for (size_t i = 0; i < count; ++i) {
        if (get(output, i) != value(i)) {
          ADD_FAILURE() << what << " out of place: element " << i << " is " << get(output, i);
          break;
        }
      }
      TypedBuffer buffer(type, count);
      for (size_t i = 0; i < count; ++i) set(buffer, i, -1);
      for (size_t i = 0; i < s && i < count; ++i) set(buffer, i, get(input, i));
      if (s > count) {  // count < size: the in-place buffer is the output; shard at its start
        continue;
      }
      comm->allGatherSync(buffer.view());
      for (size_t i = 0; i < count; ++i) {
        if (get(buffer, i) != value(i)) {
          ADD_FAILURE() << what << " in place: element " << i << " is " << get(buffer, i);
          break;
        }
      }
      // broadcast from every root, out of place and in place
      for (int root = 0; root < k; ++root) {
        TypedBuffer src(type, count);
        for (size_t i = 0; i < count; ++i) set(src, i, value(i + static_cast<size_t>(root)));
        TypedBuffer dst(type, count);
        TypedBuffer empty;
        empty.type = type;
        comm->broadcastSync(comm->rank() == root ? src.view() : empty.view(), dst.view(),
                            {root, std::nullopt, ""});
        TypedBuffer inplace(type, count);
        if (comm->rank() == root) inplace = src;
        comm->broadcastSync(inplace.view(), {root, std::nullopt, ""});
        for (size_t i = 0; i < count; ++i) {
          if (get(dst, i) != value(i + static_cast<size_t>(root)) ||
              get(inplace, i) != value(i + static_cast<size_t>(root))) {
            ADD_FAILURE() << "broadcast root " << root << " c" << count << " " << dataTypeName(type)
                          << ": element " << i;
            break;
          }
        }
      }
    }
  }
}

TEST(Collectives, AsynchronousWorkCompletesInOrder) {
  auto comm = world();
  const int k = comm->size();
  std::vector<std::vector<float>> bufs(20, std::vector<float>(4097));
  std::vector<std::shared_ptr<Work>> works;
  for (size_t j = 0; j < bufs.size(); ++j) {
    std::fill(bufs[j].begin(), bufs[j].end(), static_cast<float>(j + 1));
    works.push_back(comm->allReduce(viewOf(bufs[j].data(), bufs[j].size(), DataType::FLOAT)));
    if (j % 5 == 0) works.push_back(comm->barrier());
  }
  for (auto& w : works) w->wait(kTestTimeout);
  for (size_t j = 0; j < bufs.size(); ++j) {
    EXPECT_EQ(bufs[j][0], static_cast<float>((j + 1) * static_cast<size_t>(k)));
    EXPECT_EQ(bufs[j][4096], static_cast<float>((j + 1) * static_cast<size_t>(k)));
  }
  for (auto& w : works) EXPECT_TRUE(w->isSuccess());
}

TEST(Collectives, LargeAllReduce) {
  auto comm = world();
  const size_t n = (size_t{1} << 22) + 3;  // 16 MB of FLOAT
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>((i % 13) + static_cast<size_t>(comm->rank()));
  comm->allReduceSync(viewOf(x.data(), n, DataType::FLOAT));
  const int k = comm->size();
  for (size_t i = 0; i < n; i += 4099) {
    const float want = static_cast<float>(k * static_cast<int>(i % 13) + k * (k - 1) / 2);
    ASSERT_EQ(x[i], want) << i;
  }
}

TEST(Collectives, ConfigDisagreeingWithMpiIsRejected) {
  const auto info = launch();
  auto store = std::make_shared<InMemoryStore>("unused");
  try {
    (void)createCommunicator(CommConfig{store, info.rank, info.size + 1, "world", kTestTimeout},
                             "mpi");
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_TRUE(contains(e.what(), "is configured as rank")) << e.what();
  }
}

// ---- groups

TEST(Groups, SplitsLikeCommGroups) {
  auto comm = world();
  const int k = comm->size();
  const int r = comm->rank();
  // Consecutive groups of 2 (the last may be a single rank), then orthogonal groups (stride 2),
  // then the whole world in reverse order.
  std::vector<std::vector<int>> partitions[3];
  for (int g = 0; g < k; g += 2) {
    std::vector<int> ranks = {g};
    if (g + 1 < k) ranks.push_back(g + 1);
    partitions[0].push_back(ranks);
  }
  for (int o = 0; o < std::min(2, k); ++o) {
    std::vector<int> ranks;
    for (int x = o; x < k; x += 2) ranks.push_back(x);
    partitions[1].push_back(ranks);
  }
  std::vector<int> reversed;
  for (int x = k - 1; x >= 0; --x) reversed.push_back(x);
  partitions[2].push_back(reversed);
  for (int pi = 0; pi < 3; ++pi) {
    for (size_t g = 0; g < partitions[pi].size(); ++g) {
      const auto& ranks = partitions[pi][g];
      const auto it = std::find(ranks.begin(), ranks.end(), r);
      if (it == ranks.end()) continue;
      const std::string name = format("p{}g{}", pi, g);
      auto sub = comm->split(ranks, name);
      EXPECT_EQ(sub->name(), "world/" + name);
      EXPECT_EQ(sub->rank(), static_cast<int>(it - ranks.begin()));
      EXPECT_EQ(sub->size(), static_cast<int>(ranks.size()));
      // Sum of the world ranks of the group; a reduce-scatter and an all-gather over it.
      int64_t x = r;
      sub->allReduceSync(viewOf(&x, 1, DataType::INT64));
      int64_t want = 0;
      for (int m : ranks) want += m;
      EXPECT_EQ(x, want) << name;
      std::vector<float> v(11, static_cast<float>(r));
      std::vector<float> shard(shardCount(11, ranks.size()));
      sub->reduceScatterSync(viewOf(v.data(), v.size(), DataType::FLOAT),
                             viewOf(shard.data(), shard.size(), DataType::FLOAT));
      std::vector<float> all(11);
      sub->allGatherSync(viewOf(shard.data(), shard.size(), DataType::FLOAT),
                         viewOf(all.data(), all.size(), DataType::FLOAT));
      for (float a : all) EXPECT_EQ(a, static_cast<float>(want)) << name;
      // Nested split: the first member alone.
      if (sub->rank() == 0) {
        auto solo = sub->split({0}, "solo");
        EXPECT_EQ(solo->name(), "world/" + name + "/solo");
        solo->barrierSync();
      }
    }
    comm->barrierSync();
  }
  // The parent keeps working and the children may outlive it.
  std::shared_ptr<Communicator> child;
  {
    auto parent = world("parent");
    child = parent->split(partitions[0][static_cast<size_t>(r / 2)], "dp");
  }
  child->barrierSync();
}

// ---- the bootstrap store

// comm::Job over what the launcher exported: one world, the agreements over it, named splits.
TEST(JobWorld, AgreementsAndSplits) {
  Job& job = Job::current();
  EXPECT_EQ(&job, &Job::current());
  const int n = job.instances(), me = job.instance();
  EXPECT_EQ(job.instancesOnThisHost(), n);  // the test's instances all run here
  if (n == 1) {
    EXPECT_EQ(job.world(), nullptr);
    EXPECT_EQ(job.split("a"), nullptr);
  } else {
    ASSERT_NE(job.world(), nullptr);
    EXPECT_EQ(job.world()->size(), n);
    EXPECT_EQ(job.world()->rank(), me);
    EXPECT_EQ(job.world()->name(), "world");
  }
  EXPECT_TRUE(job.allTrue(true, "all true"));
  EXPECT_FALSE(job.allTrue(me != n - 1, "the last is false"));
  EXPECT_TRUE(job.sameEverywhere(INT64_MIN, "same extreme"));
  EXPECT_TRUE(job.sameEverywhere(INT64_MAX, "same extreme"));
  EXPECT_EQ(job.sameEverywhere(me, "rank"), n == 1);
  EXPECT_EQ(job.maxOf(7 * me - 3, "max"), 7 * (n - 1) - 3);
  // Strings of different lengths (rank 0's empty), with a zero byte inside.
  auto text = [](int r) {
    return r == 0 ? std::string() : std::string(static_cast<size_t>(3 * r), 'a' + r) + '\0' + "z";
  };
  const std::vector<std::string> all = job.gatherStrings(text(me), "strings");
  ASSERT_EQ(all.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], text(r)) << "rank " << r;
  EXPECT_EQ(job.gatherStrings("", "empty"), std::vector<std::string>(static_cast<size_t>(n)));
  EXPECT_EQ(sumOf(job.world(), {me, 1}), (std::vector<int64_t>{n * (n - 1) / 2, n}));
  if (n == 1) return;
  // Two splits, each an independent group of every instance.
  auto a = job.split("a");
  auto b = job.split("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->name(), "world/a");
  EXPECT_EQ(b->size(), n);
  EXPECT_EQ(b->rank(), me);
  EXPECT_EQ(maxOf(b.get(), me, {}), n - 1);
  EXPECT_EQ(maxOf(a.get(), -me, {}), 0);
}

TEST(Store, SetGetAddWaitCheck) {
  const auto info = launch();
  auto store = mpi::createBootstrapStore("job-a", Milliseconds(10000));
  auto other = mpi::createBootstrapStore("job-b", Milliseconds(10000));
  EXPECT_EQ(store->jobId(), "job-a");
  store->set(format("rank{}", info.rank), format("value of {}", info.rank));
  std::vector<std::string> keys;
  for (int p = 0; p < info.size; ++p) keys.push_back(format("rank{}", p));
  // Several threads per rank add concurrently.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) store->add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  store->set(format("done{}", info.rank), "");
  std::vector<std::string> done;
  for (int p = 0; p < info.size; ++p) done.push_back(format("done{}", p));
  store->wait(done);
  EXPECT_TRUE(store->check(keys));
  for (int p = 0; p < info.size; ++p) {
    EXPECT_EQ(store->get(format("rank{}", p)), format("value of {}", p));
  }
  EXPECT_EQ(store->add("counter", 0), 100 * info.size);
  EXPECT_FALSE(other->check({"rank0"})) << "job ids must separate the key spaces";
  EXPECT_FALSE(store->check({"rank0", "nothing"}));
  // Bounded waits name the missing keys.
  const auto t0 = Clock::now();
  try {
    (void)store->get("never", Milliseconds(200));
    ADD_FAILURE() << "get of a missing key returned";
  } catch (const CommTimeoutError& e) {
    EXPECT_TRUE(contains(e.what(), "never")) << e.what();
    EXPECT_TRUE(contains(e.what(), "200 ms")) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  try {
    store->wait({"rank0", "never2"}, Milliseconds(100));
    ADD_FAILURE() << "wait for a missing key returned";
  } catch (const CommTimeoutError& e) {
    EXPECT_TRUE(contains(e.what(), "never2")) << e.what();
    EXPECT_FALSE(contains(e.what(), "rank0")) << e.what();
  }
  // add() on a value that is not a counter fails on every rank with the same message.
  if (info.rank == 0) store->set("text", "abc");
  store->wait({"text"});
  EXPECT_THROW(store->add("text", 1), error);
  // A get() that waits for a value set later by another rank.
  if (info.rank == info.size - 1) {
    std::this_thread::sleep_for(Milliseconds(100));
    store->set("late", "here");
  }
  EXPECT_EQ(store->get("late"), "here");
  // No rank waits for the others here: rank 0's service keeps answering until every rank reached
  // MPI_Finalize (the last test of a run may be this one).
}

// ---- faults

TEST(Faults, MismatchIsReportedOnEveryRank) {
  auto comm = world("mm");
  const int r = comm->rank();
  std::vector<float> x(12);
  comm->barrierSync();
  const auto t0 = Clock::now();
  try {
    comm->allReduceSync(viewOf(x.data(), r == 0 ? 10 : 12, DataType::FLOAT));
    ADD_FAILURE() << "no mismatch";
  } catch (const CommMismatchError& e) {
    EXPECT_TRUE(contains(e.what(), "collective mismatch in group 'mm'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "rank 0 called allReduce seq 1 (count=10, type=FLOAT, op=Add)"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "rank 1 called allReduce seq 1 (count=12, type=FLOAT, op=Add)"))
        << e.what();
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  try {
    comm->barrierSync();
    ADD_FAILURE() << "the communicator was not aborted";
  } catch (const CommAbortedError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot be used after an earlier failure")) << e.what();
    EXPECT_TRUE(contains(e.what(), "collective mismatch")) << e.what();
  }
  // A mismatch leaves nothing pending: a new communicator works.
  auto fresh = world("after-mismatch");
  fresh->barrierSync();
}

TEST(Faults, MissingRankTimesOutNamingIt) {
  auto comm = world("to", Milliseconds(300));  // created by all at once: the timeout is safe
  const int r = comm->rank();
  const int k = comm->size();
  const int skipper = k - 1;
  float x = 1;
  comm->barrierSync();
  if (r == skipper) {
    std::this_thread::sleep_for(Milliseconds(900));
    const auto t0 = Clock::now();
    try {
      comm->allReduceSync(viewOf(&x, 1, DataType::FLOAT));
      ADD_FAILURE() << "the late rank succeeded";
    } catch (const CommAbortedError& e) {
      EXPECT_TRUE(contains(e.what(), "cannot be used after an earlier failure")) << e.what();
      EXPECT_TRUE(contains(e.what(), format("ranks [{}] did not arrive", skipper))) << e.what();
    }
    EXPECT_LT(Clock::now() - t0, Milliseconds(250)) << "a late rank must fail fast";
  } else {
    AllReduceOptions o;
    o.debugName = "grad/w1";
    const auto t0 = Clock::now();
    try {
      comm->allReduceSync(viewOf(&x, 1, DataType::FLOAT), o);
      ADD_FAILURE() << "no timeout";
    } catch (const CommTimeoutError& e) {
      for (const std::string& part :
           {std::string("group 'to'"), std::string("allReduce seq 1"), std::string("'grad/w1'"),
            std::string("300 ms"), format("ranks [{}] did not arrive", skipper)}) {
        EXPECT_TRUE(contains(e.what(), part)) << "lacks '" << part << "': " << e.what();
      }
    }
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  }
  // A late rank 0 (the coordinator): the others give up naming it; rank 0 then fails at once.
  auto comm2 = world("to0");
  comm2->barrierSync();
  BarrierOptions shortWait;
  shortWait.timeout = Milliseconds(200);
  if (r == 0) {
    std::this_thread::sleep_for(Milliseconds(1000));
    const auto t0 = Clock::now();
    try {
      comm2->barrierSync(shortWait);
      ADD_FAILURE() << "the late rank 0 succeeded";
    } catch (const CommAbortedError& e) {
      EXPECT_TRUE(contains(e.what(), "ranks [0] did not arrive")) << e.what();
    }
    EXPECT_LT(Clock::now() - t0, Milliseconds(150)) << "a late rank 0 must fail fast";
  } else {
    const auto t0 = Clock::now();
    try {
      comm2->barrierSync(shortWait);
      ADD_FAILURE() << "no timeout";
    } catch (const CommTimeoutError& e) {
      EXPECT_TRUE(contains(e.what(), "ranks [0] did not arrive")) << e.what();
      EXPECT_TRUE(contains(e.what(), "barrier seq 1")) << e.what();
    }
    EXPECT_LT(Clock::now() - t0, Milliseconds(900));
  }
  // Nothing is left pending: a new communicator works and MPI_Finalize runs at exit.
  auto fresh = world("after-timeout");
  fresh->barrierSync();
  // A split where one member never comes: the leader names it, the other member gets the same.
  if (k >= 3) {
    auto quick = world("quick", Milliseconds(400));
    if (r == 0 || r == 1) {
      const auto t0 = Clock::now();
      try {
        (void)quick->split({0, 1, 2}, "partial");
        ADD_FAILURE() << "split without rank 2 succeeded";
      } catch (const CommTimeoutError& e) {
        EXPECT_TRUE(contains(e.what(), "split of group 'quick' into 'partial'")) << e.what();
        EXPECT_TRUE(contains(e.what(), "ranks [2] did not arrive")) << e.what();
      }
      EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
    }
    fresh->barrierSync();
  }
}

}  // namespace
}  // namespace xtrain::comm

// ---- modes outside GoogleTest

namespace {

using namespace xtrain;
using namespace xtrain::comm;

int bench() {
  auto comm = xtrain::comm::world();
  const int k = comm->size();
  {
    float one = 1.0f;
    for (int i = 0; i < 100; ++i) comm->allReduceSync(viewOf(&one, 1, DataType::FLOAT));
    const int iters = 2000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) comm->allReduceSync(viewOf(&one, 1, DataType::FLOAT));
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (comm->rank() == 0) {
      std::printf("allReduce of 1 FLOAT on %d processes: %.1f us\n", k, t * 1e6);
    }
  }
  for (size_t bytes : {size_t{4} << 20, size_t{64} << 20}) {
    const size_t n = bytes / 4;
    std::vector<float> x(n, 1.0f);
    comm->allReduceSync(viewOf(x.data(), n, DataType::FLOAT));  // warm-up
    const int iters = bytes > (size_t{16} << 20) ? 5 : 20;
    comm->barrierSync();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) comm->allReduceSync(viewOf(x.data(), n, DataType::FLOAT));
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (comm->rank() == 0) {
      const double busbw = static_cast<double>(bytes) / t * 2.0 * (k - 1) / k / 1e9;
      std::printf("allReduce FLOAT Add %zu MB on %d processes: %.2f ms, busbw %.2f GB/s\n",
                  bytes >> 20, k, t * 1e3, busbw);
    }
  }
  return 0;
}

// Rank 1 kills itself in the middle of collectives; the others keep calling them.
int killPeer() {
  auto comm = xtrain::comm::world();
  std::vector<float> x(1 << 16, 1.0f);
  comm->barrierSync();
  for (int i = 0;; ++i) {
    if (comm->rank() == 1 && i == 10) {
      std::fprintf(stderr, "rank 1: SIGKILL to myself\n");
      std::fflush(stderr);
      ::raise(SIGKILL);
    }
    comm->allReduceSync(viewOf(x.data(), x.size(), DataType::FLOAT));
  }
}

// Rank 1 stops (SIGSTOP) in the middle of large all-reduces: the others time out (1 s), report it
// and exit with code 3; the launcher then ends the job (the stopped rank included).
int stall() {
  auto comm = xtrain::comm::world("world", std::chrono::milliseconds(1000));
  std::vector<float> x(size_t{1} << 24, 1.0f);
  comm->barrierSync();
  if (comm->rank() == 1) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::fprintf(stderr, "rank 1: SIGSTOP to myself\n");
      std::fflush(stderr);
      ::raise(SIGSTOP);
    }).detach();
  }
  try {
    for (;;) comm->allReduceSync(viewOf(x.data(), x.size(), DataType::FLOAT));
  } catch (const CommTimeoutError& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm->rank(), e.what());
    return 3;
  }
}

// The collective that hang() and mismatch() make go wrong: the 13th of the world (#12).
constexpr int kBadCollective = 12;

// Instance `stopper` stops itself (SIGSTOP) just before allReduce #12; the others time out there.
int hang(int stopper) {
  auto comm = createWorldCommunicator();
  float x = 1.0f;
  try {
    for (int i = 0; i < 2 * kBadCollective; ++i) {
      if (comm->rank() == stopper && i == kBadCollective) {
        std::fprintf(stderr, "instance %d: SIGSTOP to myself before collective %d\n", stopper, i);
        std::fflush(stderr);
        ::raise(SIGSTOP);
      }
      comm->allReduceSync(viewOf(&x, 1, DataType::FLOAT));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "instance %d: %s\n", comm->rank(), e.what());
    return 3;
  }
  return 0;
}

// Instance `stopper` stops itself (SIGSTOP) before it joins a second group, 'late', that every
// instance creates after three all-reduces on the world: the others wait in the group's creation.
int hangJoin(int stopper) {
  auto comm = createWorldCommunicator();
  float x = 1.0f;
  try {
    for (int i = 0; i < 3; ++i) comm->allReduceSync(viewOf(&x, 1, DataType::FLOAT));
    if (comm->rank() == stopper) {
      std::fprintf(stderr, "instance %d: SIGSTOP to myself before joining group 'late'\n", stopper);
      std::fflush(stderr);
      ::raise(SIGSTOP);
    }
    WorldOptions late;
    late.name = "late";
    auto second = createWorldCommunicator(late);
    second->allReduceSync(viewOf(&x, 1, DataType::FLOAT));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "instance %d: %s\n", comm->rank(), e.what());
    return 3;
  }
  return 0;
}

// Instance 1 calls broadcast where the others call allReduce (#12).
int mismatch() {
  auto comm = createWorldCommunicator();
  std::vector<float> x(16, 1.0f);
  try {
    for (int i = 0; i < 2 * kBadCollective; ++i) {
      const BufferView v = viewOf(x.data(), x.size(), DataType::FLOAT);
      if (comm->rank() == 1 && i == kBadCollective) {
        comm->broadcastSync(v);
      } else {
        comm->allReduceSync(v);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "instance %d: %s\n", comm->rank(), e.what());
    return 3;
  }
  return 0;
}

// Instance `failer` throws an error after a few all-reduces, which main turns into exit code
// `code` (as xtrain and the examples end on an error), while the others wait for it in the next
// all-reduce (bounded only by the communicator's timeout). Under mpirun the failing process must
// exit at once (no MPI_Finalize, which would wait for the others) so that the launcher ends the
// job with its code (tests/comm/mpi_process_test.cpp).
int fail(int failer) {
  auto comm = createWorldCommunicator();
  float x = 1.0f;
  for (int i = 0; i < 2 * kBadCollective; ++i) {
    if (comm->rank() == failer && i == kBadCollective) {
      throw error("instance {} fails on purpose before collective {}", failer, i);
    }
    comm->allReduceSync(viewOf(&x, 1, DataType::FLOAT));
  }
  return 0;
}

// All-reduces for `seconds`, then exits 0: a job to send SIGQUIT to.
int spin(double seconds) {
  auto comm = createWorldCommunicator();
  float x = 1.0f;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool said = false;
  for (;;) {
    // Every instance decides to stop at the same collective: rank 0's clock, broadcast.
    float more = std::chrono::steady_clock::now() < end ? 1.0f : 0.0f;
    comm->broadcastSync(viewOf(&more, 1, DataType::FLOAT));
    if (more == 0.0f) break;
    comm->allReduceSync(viewOf(&x, 1, DataType::FLOAT));
    if (!said) {
      std::printf("spinning\n");
      std::fflush(stdout);
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "hang") return hang(argc > 2 ? std::atoi(argv[2]) : 1);
  if (argc > 1 && std::string(argv[1]) == "hang-join") {
    return hangJoin(argc > 2 ? std::atoi(argv[2]) : 1);
  }
  if (argc > 1 && std::string(argv[1]) == "mismatch") return mismatch();
  if (argc > 1 && std::string(argv[1]) == "fail") {
    const int code = argc > 3 ? std::atoi(argv[3]) : 7;
    try {
      return fail(argc > 2 ? std::atoi(argv[2]) : 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "instance %d: %s\n", launch().rank, e.what());
      return code;
    }
  }
  if (argc > 1 && std::string(argv[1]) == "spin") return spin(argc > 2 ? std::atof(argv[2]) : 3);
  if (argc > 1 && std::string(argv[1]) == "stall") return stall();
  if (argc > 1 && std::string(argv[1]) == "bench") return bench();
  if (argc > 1 && std::string(argv[1]) == "kill") {
    try {
      return killPeer();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", launch().rank, e.what());
      return 3;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
