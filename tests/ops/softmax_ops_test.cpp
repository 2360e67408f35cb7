// Softmax and LogSoftmax: every axis, negative axes, the opset-11 coerce-to-2-D form, numerical
// stability, gradients against finite differences, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include "device/kernels/kernel_threads.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Naive reference in double: the elements normalised together with flat index i are, for coerce_2d,
// those sharing i's leading coordinates before `axis`, otherwise those differing from i only at
// `axis`.
HostTensor softmaxRef(const HostTensor& x, int64_t axis, bool coerce, bool log) {
  const Shape& s = x.shape();
  const auto rank = static_cast<int64_t>(s.size());
  const int64_t k = axis < 0 ? axis + rank : axis;
  int64_t stride = 1;  // distance between neighbours along axis k
  for (int64_t d = k + 1; d < rank; ++d) stride *= s[static_cast<size_t>(d)];
  const int64_t dimK = rank == 0 ? 1 : s[static_cast<size_t>(k)];
  HostTensor y(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) {
    std::vector<int64_t> group;
    if (coerce) {
      const int64_t tail = stride * dimK;
      for (int64_t j = 0; j < tail; ++j) group.push_back(i / tail * tail + j);
    } else {
      const int64_t coordK = (i / stride) % dimK;
      for (int64_t j = 0; j < dimK; ++j) group.push_back(i + (j - coordK) * stride);
    }
    double m = -INFINITY;
    for (int64_t g : group) m = std::max(m, x.getAsDouble(g));
    double sum = 0;
    for (int64_t g : group) sum += std::exp(x.getAsDouble(g) - m);
    const double xi = x.getAsDouble(i);
    y.setFromDouble(i, log ? xi - m - std::log(sum) : std::exp(xi - m) / sum);
  }
  return y;
}

Attributes axisAttr(int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return a;
}

BuildFn softmaxOp(const std::string& type, std::optional<int64_t> axis, int opset) {
  return [=](ir::Graph& g, auto in) {
    return addOp(g, type, in, axis ? axisAttr(*axis) : Attributes{}, 1, ir::kOnnxDomain, opset);
  };
}

class SoftmaxOps : public ::testing::TestWithParam<std::string> {
 protected:
  bool isLog() const { return GetParam() == "LogSoftmax"; }
};

TEST_P(SoftmaxOps, EveryAxisMatchesReference) {
  auto x = randomTensor({2, 3, 4}, 1, -3, 3);
  for (int64_t axis = -3; axis < 3; ++axis) {
    for (int opset : {11, 13}) {
      const bool coerce = opset < 13;
      auto out = runForward(softmaxOp(GetParam(), axis, opset), {x});
      EXPECT_TRUE(allClose(out[0], softmaxRef(x, axis, coerce, isLog()), 1e-5, 1e-6))
          << "axis " << axis << " opset " << opset;
    }
  }
}

TEST_P(SoftmaxOps, DefaultAxisDependsOnOpset) {
  auto x = randomTensor({2, 3, 4}, 2, -3, 3);
  auto out13 = runForward(softmaxOp(GetParam(), std::nullopt, 13), {x});
  EXPECT_TRUE(allClose(out13[0], softmaxRef(x, -1, false, isLog()), 1e-5, 1e-6));
  auto out11 = runForward(softmaxOp(GetParam(), std::nullopt, 11), {x});
  EXPECT_TRUE(allClose(out11[0], softmaxRef(x, 1, true, isLog()), 1e-5, 1e-6));

  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Stream);
  auto y11 = addOp(g, GetParam(), {"x"}, {}, 1, ir::kOnnxDomain, 11);
  const ir::Op& op11 = g.op(g.tensor(y11[0]).producer);
  EXPECT_EQ(op11.attrs.getInt("axis"), 1);
  EXPECT_EQ(op11.attrs.getInt("coerce_2d"), 1);
  auto y13 = addOp(g, GetParam(), {"x"}, {}, 1, ir::kOnnxDomain, 13);
  const ir::Op& op13 = g.op(g.tensor(y13[0]).producer);
  EXPECT_EQ(op13.attrs.getInt("axis"), -1);
  EXPECT_EQ(op13.attrs.getInt("coerce_2d"), 0);
}

TEST_P(SoftmaxOps, StableForLargeInputs) {
  auto x = HostTensor::fromVector<float>({2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  auto out = runForward(softmaxOp(GetParam(), -1, 13), {x});
  EXPECT_TRUE(allClose(out[0], softmaxRef(x, -1, false, isLog()), 1e-5, 1e-6));
  auto outCol = runForward(softmaxOp(GetParam(), 0, 13), {x});
  EXPECT_TRUE(allClose(outCol[0], softmaxRef(x, 0, false, isLog()), 1e-5, 1e-6));
  for (int64_t i = 0; i < 6; ++i) EXPECT_TRUE(std::isfinite(outCol[0].getAsDouble(i)));
}

TEST_P(SoftmaxOps, EdgeShapes) {
  for (const Shape& shape : {Shape{}, Shape{0, 3}, Shape{2, 0}, Shape{3, 1}, Shape{1, 1, 5}}) {
    auto x = randomTensor(shape, 3, -2, 2);
    for (int64_t axis : {int64_t{-1}, int64_t{0}}) {
      if (shape.empty() && axis < 0) continue;  // a scalar has the single axis 0
      for (int opset : {11, 13}) {
        auto out = runForward(softmaxOp(GetParam(), axis, opset), {x});
        EXPECT_TRUE(allClose(out[0], softmaxRef(x, axis, opset < 13, isLog()), 1e-5, 1e-6))
            << shapeToString(shape) << " axis " << axis << " opset " << opset;
      }
    }
  }
}

TEST_P(SoftmaxOps, GradientsMatchFiniteDifferences) {
  auto x = randomTensor({2, 3, 4}, 4, -2, 2);
  for (int64_t axis : {int64_t{-1}, int64_t{1}, int64_t{0}}) {
    for (int opset : {11, 13}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + " opset " + std::to_string(opset));
      expectGradientsMatch(softmaxOp(GetParam(), axis, opset), {x});
    }
  }
}

TEST_P(SoftmaxOps, ErrorsNameTheOp) {
  auto x = randomTensor({2, 3, 4}, 5);
  for (int64_t axis : {int64_t{3}, int64_t{-4}}) {
    expectError([&] { runForward(softmaxOp(GetParam(), axis, 13), {x}); },
                {GetParam(), "axis " + std::to_string(axis), "out of range for rank 3"});
    expectError([&] { runForward(softmaxOp(GetParam(), axis, 11), {x}); },
                {GetParam(), "opset 11", "axis " + std::to_string(axis)});
  }
  auto i = HostTensor::fromVector<int32_t>({2}, {1, 2});
  expectError([&] { runForward(softmaxOp(GetParam(), -1, 13), {i}); },
              {GetParam(), "INT32[2]", "floating-point"});
  auto d = HostTensor::fromVector<double>({2}, {1, 2});
  expectError([&] { runForward(softmaxOp(GetParam(), -1, 13), {d}); },
              {GetParam(), "DOUBLE[2]", "FLOAT"});
}

// Attention-sized inputs (many rows, the vectorised and threaded kernels' real case): the forward
// op against the reference, both along the last axis and along an inner one.
TEST_P(SoftmaxOps, LargeInputsMatchReference) {
  auto x = randomTensor({8, 4, 64, 96}, 6, -8, 8);
  for (int64_t axis : {int64_t{-1}, int64_t{2}}) {
    auto out = runForward(softmaxOp(GetParam(), axis, 13), {x});
    EXPECT_TRUE(allClose(out[0], softmaxRef(x, axis, false, isLog()), 1e-5, 1e-6)) << axis;
  }
}

// The grad kernels against their formulas evaluated in double, on many rows (of a multiple of 8
// and of ViT's 197 elements: SoftmaxGrad's own row loop has 8 lanes and a tail); the result is the
// same to the bit on 1 and 2 kernel threads.
TEST_P(SoftmaxOps, LargeGradMatchesFormulaOnAnyThreadCount) {
  for (const Shape& shape : {Shape{4, 4, 32, 80}, Shape{2, 3, 41, 197}}) {
    auto gy = randomTensor(shape, 7, -1, 1);
    for (int64_t axis : {int64_t{-1}, int64_t{1}}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + " of " + shapeToString(shape));
      auto y = softmaxRef(randomTensor(shape, 8, -4, 4), axis, false, isLog());
      const std::string type = GetParam() + "Grad";
      const BuildFn grad = [&](ir::Graph& g, auto in) {
        return addOp(g, type, in, attrs({{"axis", axis}, {"coerce_2d", int64_t{0}}}), 1,
                     ir::kXtrainDomain, 0);
      };
      // gx_i = y_i (gy_i - sum_j gy_j y_j)  or  gy_i - exp(y_i) sum_j gy_j, over the axis' group.
      const int64_t k = axis < 0 ? axis + 4 : axis;
      int64_t stride = 1;
      for (int64_t d = k + 1; d < 4; ++d) stride *= shape[static_cast<size_t>(d)];
      const int64_t dimK = shape[static_cast<size_t>(k)];
      HostTensor ref(gy.info());
      for (int64_t i = 0; i < gy.nelms(); ++i) {
        const int64_t base = i - (i / stride) % dimK * stride;
        double sum = 0;
        for (int64_t j = 0; j < dimK; ++j) {
          const int64_t e = base + j * stride;
          sum += isLog() ? gy.getAsDouble(e) : gy.getAsDouble(e) * y.getAsDouble(e);
        }
        ref.setFromDouble(i, isLog() ? gy.getAsDouble(i) - std::exp(y.getAsDouble(i)) * sum
                                     : y.getAsDouble(i) * (gy.getAsDouble(i) - sum));
      }
      device::setKernelThreadsForThisThread(1);
      auto one = runForward(grad, {gy, y});
      device::setKernelThreadsForThisThread(2);
      auto two = runForward(grad, {gy, y});
      EXPECT_TRUE(allClose(one[0], ref, 1e-5, 1e-6));
      EXPECT_EQ(std::memcmp(one[0].raw(), two[0].raw(), one[0].nbytes()), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, SoftmaxOps, ::testing::Values("Softmax", "LogSoftmax"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace xtrain::testing
