// xbench: xtrain's benchmarks, printing one line per figure in a form comparable with the peers of
// docs/performance.md, "Peers" (run them side by side with bench/run-vs-peers.sh).
//
//   xbench mlp [--steps N] [--warmup N] [--batch B] [--replicas L] [--sharded]
//       reference MLP 784-1024-1024-10, SGD lr 0.01 momentum 0.9; L local replicas, and under
//       xrun -n N the job's layout; --sharded: weights and optimizer state sharded across the
//       replicas (replicated tensor sharding: reduce-scatter, sharded update, all-gather)
//   xbench matmul [--size N] [--reps R]      float32 N x N x N GEMM: oneDNN sgemm and a naive loop
//   xbench comm [...]                        collective bandwidth, nccl-tests format
//   (comm_bench.cpp) xbench checkpoint [--bytes 400M] [--tensors N]   time to save one checkpoint
//   xbench checkpoint-stall [--mb 200]       what a save costs training
//   xbench optimizer [--optimizer NAME] [--elements N]   one optimizer update per element
//
// `xbench SUBCOMMAND --help` prints its usage (exit 0); an unknown option exits 2 naming it.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "checkpoint_bench.hpp"
#include "checkpoint_stall_bench.hpp"
#include "common/env_switch.hpp"
#include "device/kernels/sgemm.hpp"
#include "optimizer_bench.hpp"
#include "toolkit/example_models.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/session.hpp"

namespace {

using Clock = std::chrono::steady_clock;

int benchMlp(const std::vector<std::string>& args) {
  using namespace xtrain;
  using xbench::intFlag;
  const int64_t steps = intFlag(args, "--steps", 40, 1, 1000000000);
  const int64_t warmup = intFlag(args, "--warmup", 5, 0, 1000000000);
  const int64_t batch = intFlag(args, "--batch", 64, 1, 1 << 20);
  const int64_t replicasFlag = intFlag(args, "--replicas", 1, 1, 1 << 16);
  const bool sharded = std::find(args.begin(), args.end(), "--sharded") != args.end();
  tools::MlpSpec spec;
  spec.layers = {784, 1024, 1024, 10};
  spec.microBatch = batch;
  tools::BuiltModel m = tools::buildMlp(spec);
  SGD sgd({{"defaultLearningRate", {0.01f, false}}, {"defaultMomentum", {0.9f, true}}});
  // Under a launcher the job's layout (dist::); else --replicas local replicas.
  SessionOptions options;
  int64_t local = replicasFlag;
  if (dist::isPopdistEnvSet()) {
    dist::configureSessionOptions(options);
    local = dist::getNumLocalReplicas();
  } else if (local > 1) {
    options.enableReplicatedGraphs = true;
    options.replicatedGraphCount = local;
  }
  if (sharded) {
    for (auto* s :
         {&options.weightTensorLocationSettings, &options.optimizerStateTensorLocationSettings}) {
      s->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
    }
  }
  const int64_t global = options.getGlobalReplicationFactor();
  const bool printer = !dist::isPopdistEnvSet() || dist::getInstanceIndex() == 0;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(local)}});
  auto session = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1, {{m.loss, AnchorReturnType("FINAL")}}), m.loss, sgd, device, {},
      options);
  session->prepareDevice();
  session->weightsFromHost();

  std::mt19937_64 rng(0);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(local * batch * 784));
  std::vector<int32_t> y(static_cast<size_t>(local * batch));
  for (auto& v : x) v = normal(rng);
  for (auto& v : y) v = static_cast<int32_t>(rng() % 10);
  std::vector<float> losses(static_cast<size_t>(local));
  NDArrayWrapper<float> xa(x.data(), session->expectedInputBufferShape(m.input));
  NDArrayWrapper<int32_t> ya(y.data(), session->expectedInputBufferShape(m.labels));
  NDArrayWrapper<float> la(losses.data(), session->expectedAnchorBufferShape(m.loss));
  StepIO io({{m.input, xa}, {m.labels, ya}}, {{m.loss, la}});
  for (int64_t i = 0; i < warmup; ++i) session->run(io);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < steps; ++i) session->run(io);
  const double t = std::chrono::duration<double>(Clock::now() - t0).count();
  if (printer) {
    const int64_t instances = global / local;
    std::cout << "xtrain-mlp replicas=" << global << " (" << instances << " instance"
              << (instances == 1 ? "" : "s") << " x " << local << " local) batch/replica=" << batch
              << " steps=" << steps
              << " samples_per_s=" << static_cast<double>(steps * batch * global) / t
              << " final_loss=" << losses[0] << "\n";
    // The run line of the report: time per step and the share spent reducing gradients.
    const std::string report = session->getSummaryReport();
    for (const char* what : {"run: ", "gradient buckets across instances: "}) {
      const auto at = report.find(what);
      if (at != std::string::npos) {
        std::cout << "  " << report.substr(at, report.find('\n', at) - at + 1);
      }
    }
    if (readBoolSwitch("XTRAIN_PROFILE_OPS", false)) std::cout << report;
  }
  return 0;
}

int benchMatmul(const std::vector<std::string>& args) {
  using xbench::intFlag;
  const int64_t n = intFlag(args, "--size", 1024, 1, 32768);
  const int64_t reps = intFlag(args, "--reps", 20, 1, 1000000000);
  std::vector<float> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size()), d(a.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  const double flop =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);

  xtrain::device::sgemm(a.data(), b.data(), c.data(), n, n, n);  // warm-up (primitive creation)
  std::vector<double> times;
  for (int64_t r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    xtrain::device::sgemm(a.data(), b.data(), c.data(), n, n, n);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::cout << "xtrain-sgemm n=" << n << " gflops=" << flop / median / 1e9 << " (median of " << reps
            << ")\n";

  // The naive triple loop (i, j, k), as a user would first write it.
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t k = 0; k < n; ++k)
        s += a[static_cast<size_t>(i * n + k)] * b[static_cast<size_t>(k * n + j)];
      d[static_cast<size_t>(i * n + j)] = s;
    }
  }
  const double naive = std::chrono::duration<double>(Clock::now() - t0).count();
  double maxDiff = 0;
  for (size_t i = 0; i < c.size(); ++i)
    maxDiff = std::max(maxDiff, static_cast<double>(std::abs(c[i] - d[i])));
  std::cout << "naive-loop n=" << n << " gflops=" << flop / naive / 1e9
            << " max_abs_diff_vs_sgemm=" << maxDiff << "\n";
  return maxDiff < 1e-2 ? 0 : 1;
}

// One subcommand: its usage line, the flags it accepts (checkFlags) and what runs it.
struct Subcommand {
  const char* name;
  std::string usage;
  std::vector<std::string> valued;
  std::vector<std::string> switches;
  int (*run)(const std::vector<std::string>&);
};

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      {"mlp",
       "xbench mlp [--steps N] [--warmup N] [--batch B] [--replicas L] [--sharded]",
       {"--steps", "--warmup", "--batch", "--replicas"},
       {"--sharded"},
       benchMlp},
      {"matmul", "xbench matmul [--size N] [--reps R]", {"--size", "--reps"}, {}, benchMatmul},
      {"comm",
       xbench::commUsage(),
       {"--op", "-b", "--min-bytes", "-e", "--max-bytes", "-f", "--step-factor", "-n", "--iters",
        "-w", "--warmup", "--threads", "--backend", "--group", "--check"},
       {},
       xbench::benchComm},
      {"checkpoint",
       xbench::checkpointUsage(),
       {"--bytes", "--tensors", "--reps", "--dir"},
       {"--keep"},
       xbench::benchCheckpoint},
      {"checkpoint-stall",
       xbench::checkpointStallUsage(),
       {"--mb", "--reps", "--dir"},
       {},
       xbench::benchCheckpointStall},
      {"optimizer",
       xbench::optimizerUsage(),
       {"--optimizer", "--elements", "--reps"},
       {},
       xbench::benchOptimizer},
  };
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string usage = "usage:";
  for (const auto& sub : subcommands())
    usage += (usage.size() == 6 ? " " : "       ") + sub.usage + "\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << usage;
    return args.empty() ? 2 : 0;
  }
  try {
    for (const auto& sub : subcommands()) {
      if (args[0] != sub.name) continue;
      if (auto code = xbench::checkFlags(args, sub.valued, sub.switches, sub.usage)) return *code;
      return sub.run(args);
    }
    std::cerr << "xbench: unknown benchmark '" << args[0] << "'\n" << usage;
    return 2;
  } catch (const xtrain::runtime_error& e) {
    std::cerr << "xbench: " << e.what() << "\n";
    return 1;
  } catch (const xtrain::internal_error& e) {
    std::cerr << "xbench: " << e.what() << "\n";
    return 1;
  } catch (const xtrain::error& e) {
    // A bad value (xtrain::error): the user's to fix, like an unknown option.
    std::cerr << "xbench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "xbench: " << e.what() << "\n";
    return 1;
  }
}
