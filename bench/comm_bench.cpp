// xbench comm: collective bandwidth in the nccl-tests format (size, count, type, redop, root, then
// time, algbw, busbw and #wrong out of place and in place), with the bandwidth formulas of
// docs/performance.md, "Peers". Ranks are the instances of the job (xrun -n N, mpirun -np N)
// or, with --threads N, threads of this process.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "comm/grouping.hpp"
#include "comm/world.hpp"

namespace xbench {

namespace {

using namespace xtrain;
using namespace xtrain::comm;
using Clock = std::chrono::steady_clock;

enum class Coll { AllReduce, ReduceScatter, AllGather, Broadcast };

const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "allreduce";
    case Coll::ReduceScatter: return "reducescatter";
    case Coll::AllGather: return "allgather";
    case Coll::Broadcast: return "broadcast";
  }
  return "?";
}

struct CommBenchOptions {
  std::vector<Coll> colls;
  size_t minBytes = 4;
  size_t maxBytes = size_t{256} << 20;
  size_t stepFactor = 2;
  int iters = 0;  // 0: enough for about 0.25 s per size
  int warmup = 5;
  int threads = 0;  // 0: ranks are the job's instances
  std::string backend;
  std::string group = "all";
  bool check = true;
};

// busbw / algbw, nccl-tests' factors.
double busFactor(Coll c, int n) {
  if (n <= 1) return c == Coll::Broadcast ? 1.0 : 0.0;
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::ReduceScatter:
    case Coll::AllGather: return static_cast<double>(n - 1) / n;
    case Coll::Broadcast: return 1.0;
  }
  return 1.0;
}

// One collective call on float buffers. For reduce-scatter and all-gather `total` is the element
// count over the group (the nccl-tests "size"); the shard is total / n.
void issue(Communicator& comm, Coll c, std::vector<float>& in, std::vector<float>& out,
           bool inPlace) {
  const size_t n = static_cast<size_t>(comm.size());
  switch (c) {
    case Coll::AllReduce:
      if (inPlace) {
        comm.allReduceSync(viewOf(in.data(), in.size(), DataType::FLOAT));
      } else {
        comm.allReduceSync(viewOf(in.data(), in.size(), DataType::FLOAT),
                           viewOf(out.data(), out.size(), DataType::FLOAT));
      }
      return;
    case Coll::ReduceScatter:
      if (inPlace) {
        comm.reduceScatterSync(viewOf(in.data(), in.size(), DataType::FLOAT));
      } else {
        comm.reduceScatterSync(viewOf(in.data(), in.size(), DataType::FLOAT),
                               viewOf(out.data(), in.size() / n, DataType::FLOAT));
      }
      return;
    case Coll::AllGather:
      if (inPlace) {
        comm.allGatherSync(viewOf(out.data(), out.size(), DataType::FLOAT));
      } else {
        comm.allGatherSync(viewOf(in.data(), out.size() / n, DataType::FLOAT),
                           viewOf(out.data(), out.size(), DataType::FLOAT));
      }
      return;
    case Coll::Broadcast:
      if (inPlace) {
        comm.broadcastSync(viewOf(in.data(), in.size(), DataType::FLOAT));
      } else {
        comm.broadcastSync(viewOf(in.data(), in.size(), DataType::FLOAT),
                           viewOf(out.data(), out.size(), DataType::FLOAT));
      }
      return;
  }
}

// Rank r's input element i: small integers, so every sum is exact in float.
float inputValue(int r, size_t i) {
  return static_cast<float>(r + static_cast<int>(i % 7));
}

// Runs the collective once on known inputs and counts this rank's wrong output elements.
int64_t countWrong(Communicator& comm, Coll c, size_t count, bool inPlace) {
  const int n = comm.size();
  const int r = comm.rank();
  const size_t shard = count / static_cast<size_t>(n);
  std::vector<float> in, out;
  std::vector<float> want;
  switch (c) {
    case Coll::AllReduce:
    case Coll::ReduceScatter: {
      in.resize(count);
      for (size_t i = 0; i < count; ++i) in[i] = inputValue(r, i);
      out.assign(c == Coll::AllReduce ? count : shard, -1.0f);
      const size_t begin = c == Coll::AllReduce ? 0 : static_cast<size_t>(r) * shard;
      for (size_t i = 0; i < out.size(); ++i) {
        want.push_back(static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>((begin + i) % 7)));
      }
      break;
    }
    case Coll::AllGather:
      out.assign(count, -1.0f);
      in.resize(shard);
      for (size_t i = 0; i < shard; ++i) in[i] = inputValue(r, i);
      if (inPlace) std::copy(in.begin(), in.end(), out.begin());
      for (size_t i = 0; i < count; ++i)
        want.push_back(inputValue(static_cast<int>(i / shard), i % shard));
      break;
    case Coll::Broadcast:
      in.resize(count);
      for (size_t i = 0; i < count; ++i) in[i] = inputValue(r, i);
      out.assign(count, -1.0f);
      for (size_t i = 0; i < count; ++i) want.push_back(inputValue(0, i));
      break;
  }
  issue(comm, c, in, out, inPlace);
  const std::vector<float>& got =
      inPlace && c != Coll::AllGather ? in : out;  // in place: the input buffer holds the result
  int64_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i] ? 1 : 0;
  return wrong;
}

struct Figure {
  double timeUs = 0;
  double algbw = 0;
  double busbw = 0;
  int64_t wrong = 0;
};

// Times `iters` calls; the figure is the slowest rank's (a collective is as slow as its last rank).
Figure measure(Communicator& comm, Coll c, size_t count, bool inPlace, int iters, int warmup,
               bool check) {
  const auto n = static_cast<size_t>(comm.size());
  std::vector<float> in(c == Coll::AllGather ? count / n : count, 1.0f);
  std::vector<float> out(c == Coll::ReduceScatter ? count / n : count, 0.0f);
  if (c == Coll::AllGather && inPlace) in.clear();
  if (c == Coll::AllGather && inPlace) out.assign(count, 1.0f);
  // Warm up (page faults, caches, the peers' first wake-ups), then, unless -n fixed it, run enough
  // iterations for about a quarter of a second, agreed by all ranks (the slowest one's estimate).
  comm.barrierSync();
  const auto w0 = Clock::now();
  for (int i = 0; i < warmup; ++i) issue(comm, c, in, out, inPlace);
  if (iters <= 0) {
    int64_t warmNs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - w0).count();
    comm.allReduceSync(viewOf(&warmNs, 1, DataType::INT64),
                       AllReduceOptions{CollectiveOperator::Max, {}, "warm-up time"});
    const double perOp = static_cast<double>(warmNs) / std::max(1, warmup);
    iters = static_cast<int>(std::clamp(0.25e9 / std::max(perOp, 1.0), 5.0, 2000.0));
  }
  comm.barrierSync();
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) issue(comm, c, in, out, inPlace);
  int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  comm.allReduceSync(viewOf(&nanos, 1, DataType::INT64),
                     AllReduceOptions{CollectiveOperator::Max, {}, "time"});
  const double seconds = static_cast<double>(nanos) * 1e-9 / iters;
  Figure f;
  f.timeUs = seconds * 1e6;
  const double bytes = static_cast<double>(count) * sizeof(float);
  f.algbw = bytes / seconds / 1e9;
  f.busbw = f.algbw * busFactor(c, comm.size());
  if (check) {
    int64_t wrong = countWrong(comm, c, count, inPlace);
    comm.allReduceSync(viewOf(&wrong, 1, DataType::INT64));
    f.wrong = wrong;
  }
  return f;
}

const char* redopOf(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter ? "sum" : "none";
}

// Every rank runs this; rank 0 of the world prints.
int runOnWorld(Communicator& world, const CommBenchOptions& o) {
  std::shared_ptr<Communicator> groupComm;
  Communicator* comm = &world;
  if (o.group != "all") {
    const auto colon = o.group.find(':');
    const std::string kind = o.group.substr(0, colon);
    const unsigned k = colon == std::string::npos
                           ? 0
                           : static_cast<unsigned>(std::stoul(o.group.substr(colon + 1)));
    CommGroupType type = CommGroupType::All;
    if (kind == "consecutive")
      type = CommGroupType::Consecutive;
    else if (kind == "orthogonal")
      type = CommGroupType::Orthogonal;
    else
      throw error("xbench comm: --group '{}' is not all, consecutive:K or orthogonal:K", o.group);
    groupComm = splitByCommGroup(world, CommGroup(type, k), "bench").comm;
    comm = groupComm.get();
  }
  const bool printer = world.rank() == 0;
  const int n = comm->size();
  double busSum = 0;
  int busCount = 0;
  int64_t wrongTotal = 0;
  if (printer) {
    std::printf("# xbench comm: backend %s, %d ranks in the world, group %s of %d ranks\n",
                world.backendName().c_str(), world.size(), o.group.c_str(), n);
  }
  for (Coll c : o.colls) {
    if (printer) {
      std::printf("#\n# %s\n", collName(c));
      std::printf("# %10s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s\n", "", "", "", "", "",
                  "out-of-place", "", "", "", "in-place", "", "", "");
      std::printf("# %10s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s\n", "size", "count",
                  "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                  "busbw", "#wrong");
      std::printf("# %10s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s\n", "(B)",
                  "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                  "(GB/s)", "");
    }
    // The next size is taken only while it stays within -e: bytes * factor must not wrap (a factor
    // of 2^62 once wrapped to 0 and looped forever).
    for (size_t bytes = o.minBytes;; bytes *= o.stepFactor) {
      // Reduce-scatter and all-gather move `bytes` over the group: a whole number of shards.
      size_t count = std::max<size_t>(1, bytes / sizeof(float));
      if (c == Coll::ReduceScatter || c == Coll::AllGather) {
        count = std::max<size_t>(static_cast<size_t>(n),
                                 count / static_cast<size_t>(n) * static_cast<size_t>(n));
      }
      const int iters = o.iters;  // 0: measured per size
      const Figure out = measure(*comm, c, count, false, iters, o.warmup, o.check);
      const Figure in = measure(*comm, c, count, true, iters, o.warmup, o.check);
      busSum += out.busbw + in.busbw;
      busCount += 2;
      wrongTotal += out.wrong + in.wrong;
      if (printer) {
        std::printf("  %10zu %12zu %8s %6s %6s %10.2f %8.3f %8.3f %6lld %10.2f %8.3f %8.3f %6lld\n",
                    count * sizeof(float), count, "float", redopOf(c),
                    c == Coll::Broadcast ? "0" : "-1", out.timeUs, out.algbw, out.busbw,
                    static_cast<long long>(out.wrong), in.timeUs, in.algbw, in.busbw,
                    static_cast<long long>(in.wrong));
        std::fflush(stdout);
      }
      if (o.stepFactor < 2 || bytes > o.maxBytes / o.stepFactor) break;
    }
  }
  if (printer) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrongTotal),
                wrongTotal == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %.4f\n#\n", busCount ? busSum / busCount : 0.0);
  }
  return wrongTotal == 0 ? 0 : 1;
}

std::vector<Coll> parseColls(const std::string& s) {
  if (s == "all") return {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast};
  std::vector<Coll> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    const std::string name = s.substr(start, end - start);
    if (name == "allreduce")
      out.push_back(Coll::AllReduce);
    else if (name == "reducescatter")
      out.push_back(Coll::ReduceScatter);
    else if (name == "allgather")
      out.push_back(Coll::AllGather);
    else if (name == "broadcast")
      out.push_back(Coll::Broadcast);
    else {
      throw error(
          "xbench comm: --op '{}' is not allreduce, reducescatter, allgather, broadcast or all",
          name);
    }
    start = end + 1;
  }
  return out;
}

}  // namespace

const char* commUsage() {
  return "xbench comm [--op allreduce,reducescatter,allgather,broadcast|all] [-b MIN_BYTES] "
         "[-e MAX_BYTES] [-f FACTOR] [-n ITERS] [-w WARMUP] [--threads N] [--backend B] "
         "[--group all|consecutive:K|orthogonal:K] [--check 0|1]\n"
         "  ranks: the job's instances (xrun -n N xbench comm, mpirun -np N xbench comm), or N "
         "threads with --threads N\n  sizes accept K, M and G suffixes (powers of 1024)";
}

int benchComm(const std::vector<std::string>& args) {
  CommBenchOptions o;
  o.colls = parseColls(stringFlag(args, {"--op"}, "allreduce"));
  o.minBytes = sizeFlag(args, {"-b", "--min-bytes"}, 4);
  o.maxBytes = sizeFlag(args, {"-e", "--max-bytes"}, size_t{256} << 20);
  o.stepFactor = sizeFlag(args, {"-f", "--step-factor"}, 2);
  o.iters = intCountFlag(args, {"-n", "--iters"}, 0);
  o.warmup = std::max(1, intCountFlag(args, {"-w", "--warmup"}, 5));
  o.threads = intCountFlag(args, {"--threads"}, 0);
  o.backend = stringFlag(args, {"--backend"}, "");
  o.group = stringFlag(args, {"--group"}, "all");
  o.check = sizeFlag(args, {"--check"}, 1) != 0;
  if (o.minBytes == 0 || o.minBytes > o.maxBytes) {
    throw error("xbench comm: -b {} must be positive and at most -e {}", o.minBytes, o.maxBytes);
  }
  if (o.stepFactor < 1) throw error("xbench comm: -f must be at least 1");
  // One thread per rank: more than this is a typo, not a benchmark.
  if (o.threads > 1024)
    throw error("xbench comm: --threads must be at most 1024, got {}", o.threads);
  if (o.threads == 0) {
    WorldOptions w;
    w.backend = o.backend;
    auto world = createWorldCommunicator(w);
    return runOnWorld(*world, o);
  }
  auto store = std::make_shared<InMemoryStore>("xbench");
  std::vector<int> codes(static_cast<size_t>(o.threads), 0);
  std::vector<std::string> errors(static_cast<size_t>(o.threads));
  std::vector<std::thread> threads;
  for (int r = 0; r < o.threads; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = createCommunicator(CommConfig{store, r, o.threads, "world", std::nullopt},
                                       o.backend.empty() ? "inproc" : o.backend);
        codes[static_cast<size_t>(r)] = runOnWorld(*comm, o);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
        codes[static_cast<size_t>(r)] = 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) std::cerr << "xbench comm: rank " << r << ": " << errors[r] << "\n";
  }
  return *std::max_element(codes.begin(), codes.end());
}

}  // namespace xbench
