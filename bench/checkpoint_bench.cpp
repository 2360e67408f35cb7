#include "checkpoint_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "bench_args.hpp"
#include "checkpoint/checkpoint.hpp"
#include "common/host_tensor.hpp"

namespace xbench {

namespace fs = std::filesystem;
namespace ckpt = xtrain::checkpoint;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `count` FLOAT tensors of `total` bytes together (the last takes the remainder), filled with
// non-constant values so that nothing along the way can shortcut zeros.
std::vector<ckpt::Dataset> makeTensors(size_t total, size_t count) {
  const size_t elements = total / sizeof(float);
  std::vector<ckpt::Dataset> out;
  for (size_t i = 0; i < count; ++i) {
    const size_t n = i + 1 < count ? elements / count : elements - (count - 1) * (elements / count);
    xtrain::HostTensor t(xtrain::TensorInfo(xtrain::DataType::FLOAT, {static_cast<int64_t>(n)}));
    float* p = t.data<float>();
    for (size_t k = 0; k < n; ++k)
      p[k] = static_cast<float>((k * 2654435761u + i) % 1000003) * 1e-3f;
    out.push_back({"/weights/w" + std::to_string(i), std::move(t)});
  }
  return out;
}

}  // namespace

const char* checkpointUsage() {
  return "xbench checkpoint [--bytes 400M] [--tensors 40] [--reps 3] [--dir D] [--keep]";
}

int benchCheckpoint(const std::vector<std::string>& args) {
  const size_t bytes = sizeFlag(args, {"--bytes"}, size_t{400} << 20);
  const size_t tensors = sizeFlag(args, {"--tensors"}, 40);
  const size_t reps = sizeFlag(args, {"--reps"}, 3);
  const bool keep = std::find(args.begin(), args.end(), "--keep") != args.end();
  if (tensors == 0 || reps == 0 || bytes < tensors * sizeof(float)) {
    throw xtrain::error(
        "xbench checkpoint: need --tensors >= 1, --reps >= 1 and --bytes of at "
        "least one float per tensor");
  }
  // Checkpoints go to a directory of their own inside --dir (default: the temporary directory).
  const fs::path parent = stringFlag(args, {"--dir"}, fs::temp_directory_path().string());
  const fs::path dir = parent / ("xbench-checkpoint-" + std::to_string(::getpid()));
  fs::create_directories(dir);

  const auto datasets = makeTensors(bytes, tensors);
  ckpt::Attributes attributes;
  attributes.optimizerType = "SGD";
  std::vector<double> total, part, index, commit;
  for (size_t r = 0; r < reps; ++r) {
    const std::string final = (dir / ckpt::checkpointName(static_cast<int64_t>(r))).string();
    const std::string staging = final + ".tmp-bench";
    attributes.step = static_cast<int64_t>(r);
    const auto t0 = Clock::now();
    ckpt::writePart(staging, 0, datasets);
    const double tPart = since(t0);
    ckpt::writeIndex(staging, attributes, 1);
    const double tIndex = since(t0) - tPart;
    ckpt::commit(staging, final);
    total.push_back(since(t0));
    part.push_back(tPart);
    index.push_back(tIndex);
    commit.push_back(total.back() - tPart - tIndex);
    // Only one checkpoint on disk at a time (outside the timing).
    if (r + 1 < reps || !keep) fs::remove_all(final);
  }
  const double t = median(total);
  std::cout << "xtrain-checkpoint bytes=" << bytes << " tensors=" << tensors << " seconds=" << t
            << " GBps=" << static_cast<double>(bytes) / t / 1e9 << " (median of " << reps
            << "; part=" << median(part) << "s index=" << median(index)
            << "s commit=" << median(commit) << "s)\n";
  if (keep) {
    std::cout << "kept " << (dir / ckpt::checkpointName(static_cast<int64_t>(reps - 1))).string()
              << "\n";
  } else {
    fs::remove_all(dir);
  }
  return 0;
}

}  // namespace xbench
