// The elementwise kernels' fast paths for large tensors (src/device/kernels/elementwise.hpp:
// chunks split over the kernel threads, a bias row repeated along leading dimensions; Sum,
// BroadcastToShape's row copies; Tanh on oneDNN) give what the plain loops give, and the same bits
// at 1, 2 and 3 kernel threads. ReduceSumToShape of rows (a bias gradient) is checked beside them.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "device/kernels/kernel_threads.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Several chunks of kParallelChunk (32768) elements, and a row length that is no multiple of 4.
const Shape kBig{70, 1031};

// The outputs of build on inputs at 1, 2 and 3 kernel threads: equal bit for bit; returns the
// first.
std::vector<HostTensor> atEveryThreadCount(const BuildFn& build,
                                           const std::vector<HostTensor>& inputs) {
  const int before = device::kernelThreadsForThisThread();
  std::vector<std::vector<HostTensor>> results;
  for (int threads : {1, 2, 3}) {
    device::setKernelThreadsForThisThread(threads);
    results.push_back(runForward(build, inputs));
  }
  device::setKernelThreadsForThisThread(before);
  for (size_t k = 1; k < results.size(); ++k) {
    for (size_t j = 0; j < results[0].size(); ++j) {
      EXPECT_TRUE(allClose(results[k][j], results[0][j], 0.0, 0.0))
          << "output " << j << " differs at " << k + 1 << " threads";
    }
  }
  return results[0];
}

BuildFn one(const std::string& type, const std::string& domain = ir::kOnnxDomain,
            Attributes a = {}) {
  return [type, domain, a](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, type, in, a, 1, domain);
  };
}

struct BinaryCase {
  std::string type;
  std::function<float(float, float)> f;
};

TEST(ElementwiseThreads, BinaryOpsWithABiasRowMatchThePlainLoop) {
  const std::vector<BinaryCase> cases = {{"Add", [](float a, float b) { return a + b; }},
                                         {"Sub", [](float a, float b) { return a - b; }},
                                         {"Mul", [](float a, float b) { return a * b; }},
                                         {"Div", [](float a, float b) { return a / b; }}};
  const HostTensor big = randomTensor(kBig, 1, 0.5f, 2.0f);
  for (const auto& c : cases) {
    for (const Shape& rowShape : {Shape{1031}, Shape{1, 1031}, Shape{}, Shape{70, 1031}}) {
      const HostTensor row = randomTensor(rowShape, 2, 0.5f, 2.0f);
      for (bool rowFirst : {false, true}) {
        const auto out = atEveryThreadCount(
            one(c.type), rowFirst ? std::vector{row, big} : std::vector{big, row});
        HostTensor want(big.info());
        const int64_t r = row.nelms();
        for (int64_t i = 0; i < big.nelms(); ++i) {
          const float a = big.data<float>()[i], b = row.data<float>()[i % r];
          want.data<float>()[i] = rowFirst ? c.f(b, a) : c.f(a, b);
        }
        EXPECT_TRUE(allClose(out[0], want, 0.0, 0.0))
            << c.type << " with " << shapeToString(rowShape) << (rowFirst ? " first" : " second");
      }
    }
  }
}

TEST(ElementwiseThreads, SumAddsInInputOrder) {
  const HostTensor a = randomTensor(kBig, 3), b = randomTensor(kBig, 4), c = randomTensor(kBig, 5);
  const HostTensor bias = randomTensor({1031}, 6);
  const auto out = atEveryThreadCount(one("Sum"), {a, b, bias, c});
  HostTensor want(a.info());
  for (int64_t i = 0; i < a.nelms(); ++i) {
    float s = 0.0f;
    s += a.data<float>()[i];
    s += b.data<float>()[i];
    s += bias.data<float>()[i % 1031];
    s += c.data<float>()[i];
    want.data<float>()[i] = s;
  }
  EXPECT_TRUE(allClose(out[0], want, 0.0, 0.0));
}

TEST(ElementwiseThreads, ReduceSumToShapeOfRowsAddsRowsInOrder) {
  for (const Shape& target : {Shape{1031}, Shape{1, 1031}}) {
    for (const Shape& from : {kBig, Shape{2, 35, 1031}}) {
      const HostTensor x = randomTensor(from, 7);
      Attributes a;
      a.set("shape", std::vector<int64_t>(target.begin(), target.end()));
      const auto out = atEveryThreadCount(one("ReduceSumToShape", ir::kXtrainDomain, a), {x});
      HostTensor want(TensorInfo(DataType::FLOAT, target));
      for (int64_t j = 0; j < 1031; ++j) {
        float s = 0.0f;
        for (int64_t r = 0; r < x.nelms() / 1031; ++r) s += x.data<float>()[r * 1031 + j];
        want.data<float>()[j] = s;
      }
      EXPECT_TRUE(allClose(out[0], want, 0.0, 0.0))
          << shapeToString(from) << " -> " << shapeToString(target);
    }
  }
}

TEST(ElementwiseThreads, BroadcastToShapeRepeatsRows) {
  for (const Shape& from : {Shape{1031}, Shape{1, 1031}, Shape{}, Shape{70, 1}}) {
    const HostTensor x = randomTensor(from, 13);
    Attributes a;
    a.set("shape", std::vector<int64_t>(kBig.begin(), kBig.end()));
    const auto out = runForward(one("BroadcastToShape", ir::kXtrainDomain, a), {x});
    HostTensor want(TensorInfo(DataType::FLOAT, kBig));
    for (int64_t r = 0; r < 70; ++r) {
      for (int64_t j = 0; j < 1031; ++j) {
        const int64_t i = x.nelms() == 1031 ? j : (x.nelms() == 70 ? r : 0);
        want.data<float>()[r * 1031 + j] = x.data<float>()[i];
      }
    }
    EXPECT_TRUE(allClose(out[0], want, 0.0, 0.0)) << shapeToString(from);
  }
}

TEST(ElementwiseThreads, TanhAndItsGradientMatchTheReference) {
  const HostTensor x = randomTensor(kBig, 8, -6.0f, 6.0f);
  const HostTensor gy = randomTensor(kBig, 9);
  const HostTensor y = atEveryThreadCount(one("Tanh"), {x})[0];
  const HostTensor gx = atEveryThreadCount(one("TanhGrad", ir::kXtrainDomain), {gy, y})[0];
  HostTensor wantY(x.info()), wantGx(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) {
    const double t = std::tanh(static_cast<double>(x.data<float>()[i]));
    wantY.data<float>()[i] = static_cast<float>(t);
    const double yk = y.data<float>()[i];
    wantGx.data<float>()[i] = static_cast<float>(gy.data<float>()[i] * (1.0 - yk * yk));
  }
  EXPECT_TRUE(allClose(y, wantY, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(gx, wantGx, 1e-5, 1e-6));
  for (const Shape& shape : {Shape{}, Shape{0, 4}, Shape{3, 5}}) {
    const HostTensor small = randomTensor(shape, 10, -3.0f, 3.0f);
    const HostTensor ys = runForward(one("Tanh"), {small})[0];
    for (int64_t i = 0; i < small.nelms(); ++i) {
      EXPECT_NEAR(ys.data<float>()[i], std::tanh(small.data<float>()[i]), 1e-6);
    }
  }
}

TEST(ElementwiseThreads, MappedFunctionsDoNotDependOnTheThreadCount) {
  const HostTensor x = randomTensor(kBig, 11, -3.0f, 3.0f);
  const HostTensor gy = randomTensor(kBig, 12);
  const HostTensor erf = atEveryThreadCount(one("Erf"), {x})[0];
  atEveryThreadCount(one("ErfGrad", ir::kXtrainDomain), {gy, x});
  atEveryThreadCount(one("Relu"), {x});
  atEveryThreadCount(one("Exp"), {x});
  for (int64_t i = 0; i < x.nelms(); i += 997) {
    EXPECT_NEAR(erf.data<float>()[i], std::erf(x.data<float>()[i]), 1e-6);
  }
}

}  // namespace
}  // namespace xtrain::testing
