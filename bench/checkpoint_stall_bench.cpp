#include "checkpoint_stall_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "bench_args.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xbench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

const char* checkpointStallUsage() {
  return "xbench checkpoint-stall [--mb 200] [--reps 3] [--dir D]   (weight MB; weight + velocity "
         "are saved)";
}

int benchCheckpointStall(const std::vector<std::string>& args) {
  const size_t mb = sizeFlag(args, {"--mb"}, 200);
  const size_t reps = sizeFlag(args, {"--reps"}, 3);
  const fs::path parent = stringFlag(args, {"--dir"}, fs::temp_directory_path().string());
  const fs::path dir = parent / ("xbench-checkpoint-stall-" + std::to_string(::getpid()));
  fs::create_directories(dir);

  // y = x W with W [n, n], loss = sum(y * y): one weight of about `mb` MB.
  const auto n = static_cast<int64_t>(std::sqrt(static_cast<double>(mb << 20) / 4.0));
  auto b = xtrain::Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const auto x = b->addInputTensor(xtrain::TensorInfo(xtrain::DataType::FLOAT, {1, n}), "x");
  const auto w = b->addInitializedInputTensor(
      xtrain::ConstVoidData::fromVector<float>(
          {n, n}, std::vector<float>(static_cast<size_t>(n * n), 1e-4f)),
      "W");
  const auto y = onnx.matmul({x, w});
  const auto loss =
      b->aiGraphcoreOpset1().identityloss({onnx.mul({y, y})}, xtrain::ReductionType::Sum);
  b->addOutputTensor(loss);
  auto device = xtrain::DeviceManager::createDeviceManager().createCpuDevice();
  auto s = xtrain::TrainingSession::createFromOnnxModel(
      b->getModelProto(), xtrain::DataFlow(1), loss, xtrain::ConstSGD(1e-6f, 0.0f, 0.9f), device);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> input(static_cast<size_t>(n), 0.01f);
  xtrain::NDArrayWrapper<float> xa(input.data(), {1, n});
  xtrain::StepIO io({{x, xa}}, {});
  auto step = [&] {
    const auto t0 = Clock::now();
    s->run(io);
    return since(t0);
  };
  for (int i = 0; i < 3; ++i) step();
  std::vector<double> steps;
  for (int i = 0; i < 7; ++i) steps.push_back(step());
  const double stepTime = median(steps);

  std::vector<double> sync, blocked, extra, written;
  int saved = 0;
  for (size_t r = 0; r < reps; ++r) {
    const std::string a = (dir / ("sync-" + std::to_string(r))).string();
    auto t0 = Clock::now();
    s->saveCheckpoint(a);
    sync.push_back(since(t0));
    fs::remove_all(a);

    // Asynchronous: the call, then steps until the write is done (waitForCheckpoint after a step
    // that found it finished costs nothing): extra = their time beyond as many plain steps.
    const std::string c = (dir / ("async-" + std::to_string(r))).string();
    xtrain::CheckpointOptions o;
    o.asynchronous = true;
    t0 = Clock::now();
    s->saveCheckpoint(c, o);
    blocked.push_back(since(t0));
    double during = 0;
    int count = 0;
    while (!fs::exists(fs::path(c) / "checkpoint.h5") && count < 10000) {
      during += step();
      ++count;
    }
    s->waitForCheckpoint();
    written.push_back(since(t0));
    extra.push_back(std::max(0.0, during - count * stepTime));
    fs::remove_all(c);
    ++saved;
  }
  const double bytes = 2.0 * static_cast<double>(n * n) * 4.0;
  std::cout << "xtrain-checkpoint-stall bytes=" << static_cast<int64_t>(bytes)
            << " step=" << stepTime << "s sync_save=" << median(sync)
            << "s async_blocking=" << median(blocked) << "s async_extra_step_time=" << median(extra)
            << "s async_written_after=" << median(written) << "s (medians of " << saved << ")\n";
  fs::remove_all(dir);
  return 0;
}

}  // namespace xbench
