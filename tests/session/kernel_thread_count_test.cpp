// KernelRegistry::create's kernels and the kernel thread count (device/kernel.hpp): a kernel runs
// what its factory made for the running thread's count, made once per count; a small kernel is
// made and run with one thread. A real oneDNN convolution gives the same numbers whichever count
// it was made for.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/kernel_threads.hpp"

namespace xtrain {
namespace {

constexpr const char* kDomain = "test.kernel_threads";

// Writes the kernel thread count its factory saw into output 0's first element.
std::atomic<int> factoryCalls{0};
const device::KernelRegistrar registerProbe(kDomain, "MadeFor", [](const device::KernelSpec&) {
  ++factoryCalls;
  const int madeFor = device::kernelThreadsForThisThread();
  return device::makeKernel([madeFor](const device::KernelIO& io) {
    io.out(0).data<float>()[0] = static_cast<float>(madeFor);
  });
});

device::KernelSpec probeSpec(int64_t elements) {
  device::KernelSpec spec;
  spec.type = "MadeFor";
  spec.domain = kDomain;
  spec.description = "MadeFor";
  spec.outputs = {TensorInfo(DataType::FLOAT, {elements})};
  return spec;
}

// What `kernel` runs when the calling thread's count is `threads`.
int madeFor(device::Kernel& kernel, HostTensor& out, int threads) {
  const int before = device::kernelThreadsForThisThread();
  device::setKernelThreadsForThisThread(threads);
  HostTensor* outs[] = {&out};
  device::KernelIO io;
  io.outputs = outs;
  kernel.run(io);
  device::setKernelThreadsForThisThread(before);
  return static_cast<int>(out.data<float>()[0]);
}

TEST(KernelThreadCount, AKernelRunsWhatWasMadeForTheRunningThreadsCount) {
  const int before = device::kernelThreadsForThisThread();
  device::setKernelThreadsForThisThread(2);
  const device::KernelSpec spec = probeSpec(device::kSmallWorkElements + 1);
  factoryCalls = 0;
  auto kernel = device::KernelRegistry::instance().create(spec);
  device::setKernelThreadsForThisThread(before);
  EXPECT_EQ(factoryCalls, 1);
  HostTensor out(spec.outputs[0]);
  EXPECT_EQ(madeFor(*kernel, out, 2), 2);
  EXPECT_EQ(factoryCalls, 1) << "the count it was made for needs no other";
  EXPECT_EQ(madeFor(*kernel, out, 1), 1);
  EXPECT_EQ(factoryCalls, 2);
  EXPECT_EQ(madeFor(*kernel, out, 2), 2);
  EXPECT_EQ(madeFor(*kernel, out, 1), 1);
  EXPECT_EQ(madeFor(*kernel, out, 3), 3);
  EXPECT_EQ(factoryCalls, 3) << "once per count";
  // Threads with other counts at once (replicas share a program's kernels).
  std::vector<std::thread> threads;
  std::vector<int> seen(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      HostTensor mine(spec.outputs[0]);
      seen[static_cast<size_t>(t)] = madeFor(*kernel, mine, 1 + t % 2 * 3);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen, (std::vector<int>{1, 4, 1, 4}));
  EXPECT_EQ(factoryCalls, 4);
}

TEST(KernelThreadCount, ASmallKernelIsMadeAndRunWithOneThread) {
  const device::KernelSpec spec = probeSpec(16);
  factoryCalls = 0;
  auto kernel = device::KernelRegistry::instance().create(spec);
  HostTensor out(spec.outputs[0]);
  EXPECT_EQ(madeFor(*kernel, out, 2), 1);
  EXPECT_EQ(madeFor(*kernel, out, 1), 1);
  EXPECT_EQ(factoryCalls, 1);
}

// A oneDNN convolution made for two threads and for one computes the same output.
TEST(KernelThreadCount, AConvolutionMadeForEachCountGivesTheSameOutput) {
  device::KernelSpec spec;
  spec.type = "Conv";
  spec.domain = "ai.onnx";
  spec.description = "Conv 'c'";
  spec.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  spec.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  spec.inputs = {TensorInfo(DataType::FLOAT, {2, 16, 32, 32}),
                 TensorInfo(DataType::FLOAT, {32, 16, 3, 3})};
  spec.outputs = {TensorInfo(DataType::FLOAT, {2, 32, 32, 32})};
  const int before = device::kernelThreadsForThisThread();
  device::setKernelThreadsForThisThread(2);
  auto kernel = device::KernelRegistry::instance().create(spec);
  std::vector<HostTensor> in;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& info : spec.inputs) {
    in.emplace_back(info);
    for (int64_t i = 0; i < info.nelms(); ++i) in.back().data<float>()[i] = u(rng);
  }
  HostTensor* ins[] = {&in[0], &in[1]};
  auto runWith = [&](int threads) {
    HostTensor out(spec.outputs[0]);
    HostTensor* outs[] = {&out};
    device::KernelIO io;
    io.inputs = ins;
    io.outputs = outs;
    device::setKernelThreadsForThisThread(threads);
    kernel->run(io);
    return std::vector<float>(out.data<float>(), out.data<float>() + out.nelms());
  };
  const std::vector<float> two = runWith(2);
  const std::vector<float> one = runWith(1);
  device::setKernelThreadsForThisThread(before);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(one[i], two[i], 1e-4f) << i;
}

}  // namespace
}  // namespace xtrain
