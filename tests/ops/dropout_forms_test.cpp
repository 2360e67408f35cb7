// Dropout in every opset form from 7 to 17: the mask's type (data type at 7-9, BOOL from 10), the
// training mode each form implies, the seed attribute, and the gradient with either mask type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "device/kernels/kernel_threads.hpp"
#include "device/kernels/parallel_elements.hpp"
#include "ir/autodiff/autodiff.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Runs `build` forward and backward with loss = sum(out[0] * proj); returns the outputs and dx.
struct Run {
  std::vector<HostTensor> outputs;
  HostTensor dx;
};

Run runWithGradient(const BuildFn& build, const HostTensor& x, const HostTensor& proj,
                    uint64_t seed = 3) {
  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  auto outs = build(g, {"x"});
  g.addTensor("proj", proj.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(proj));
  auto prod = addOp(g, "Mul", {outs[0], "proj"});
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  auto loss = addOp(g, "ReduceSumToShape", prod, a, 1, ir::kXtrainDomain);
  auto grads = ir::autodiff(g, loss[0], {"x"});
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, seed);
  lowered.run(ir::Phase::Backward, buffers, seed);
  Run r;
  for (const auto& o : outs)
    r.outputs.push_back(buffers[static_cast<size_t>(lowered.bufferIndex(o))]);
  r.dx = buffers[static_cast<size_t>(lowered.bufferIndex(grads.at("x")))];
  return r;
}

BuildFn dropout(int opset, Attributes a, int numOutputs) {
  return [=](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "Dropout", in, a, numOutputs, ir::kOnnxDomain, opset);
  };
}

TEST(DropoutForms, MaskTypeFollowsTheOpset) {
  auto x = randomTensor({4, 50}, 1, 0.5f, 1.5f);
  for (int opset = 7; opset <= 17; ++opset) {
    Attributes a;
    if (opset < 12) a.set("ratio", 0.3f);
    // Opsets 12+ need training_mode to drop; give it as a constant input like the exporter does.
    BuildFn build = opset < 12 ? dropout(opset, a, 2) : [opset](ir::Graph& g, auto in) {
      HostTensor ratio = HostTensor::scalar(0.3f);
      HostTensor mode(TensorInfo(DataType::BOOL, {}));
      mode.setFromDouble(0, 1);
      g.addTensor("ratio", ratio.info(), ir::TensorKind::Const,
                  std::make_shared<HostTensor>(ratio));
      g.addTensor("mode", mode.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(mode));
      return addOp(g, "Dropout", {in[0], "ratio", "mode"}, {}, 2, ir::kOnnxDomain, opset);
    };
    auto out = runForward(build, {x});
    const DataType want = opset < 10 ? DataType::FLOAT : DataType::BOOL;
    EXPECT_EQ(out[1].info(), TensorInfo(want, x.shape())) << "opset " << opset;
    int64_t kept = 0;
    for (int64_t i = 0; i < x.nelms(); ++i) {
      const double m = out[1].getAsDouble(i);
      EXPECT_TRUE(m == 0.0 || m == 1.0) << opset << " " << i;
      kept += m != 0.0 ? 1 : 0;
      // Reference: kept elements scaled by 1 / (1 - ratio), dropped ones 0.
      const double y = m != 0.0 ? x.getAsDouble(i) / 0.7 : 0.0;
      EXPECT_NEAR(out[0].getAsDouble(i), y, 1e-5) << opset << " " << i;
    }
    EXPECT_GT(kept, 0) << opset;
    EXPECT_LT(kept, x.nelms()) << opset;
  }
}

TEST(DropoutForms, TrainingModeOfEachForm) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {4}), ir::TensorKind::Stream);
  auto mode = [&](int opset, Attributes a) {
    auto out = addOp(g, "Dropout", {"x"}, a, 1, ir::kOnnxDomain, opset);
    return g.op(g.tensor(out[0]).producer).attrs.getInt("training_mode");
  };
  for (int opset : {7, 9, 10, 11}) EXPECT_EQ(mode(opset, {}), 1) << opset;
  for (int opset : {12, 13, 17}) EXPECT_EQ(mode(opset, {}), 0) << opset;
  // An opset-6 style is_test=1 is honoured (and dropped from the canonical form).
  auto out = addOp(g, "Dropout", {"x"}, attrs({{"is_test", int64_t{1}}}), 1, ir::kOnnxDomain, 7);
  const ir::Op& op = g.op(g.tensor(out[0]).producer);
  EXPECT_EQ(op.attrs.getInt("training_mode"), 0);
  EXPECT_FALSE(op.attrs.has("is_test"));
}

TEST(DropoutForms, InferenceAtOpset9GivesAllOnesFloatMask) {
  auto x = randomTensor({3, 5}, 2);
  auto out = runForward(dropout(9, attrs({{"training_mode", int64_t{0}}}), 2), {x});
  EXPECT_TRUE(allClose(out[0], x, 0, 0));
  EXPECT_EQ(out[1].toVector<float>(), std::vector<float>(15, 1.0f));
}

TEST(DropoutForms, GradientWithEitherMaskType) {
  auto x = randomTensor({6, 7}, 4, 0.5f, 1.5f);
  auto proj = randomTensor({6, 7}, 5);
  const float ratio = 0.4f;
  for (int opset : {7, 9, 10, 11}) {
    for (int numOutputs : {1, 2}) {
      auto r = runWithGradient(dropout(opset, attrs({{"ratio", ratio}}), numOutputs), x, proj);
      HostTensor want(x.info());
      for (int64_t i = 0; i < x.nelms(); ++i) {
        const bool keep = r.outputs[0].getAsDouble(i) != 0;  // x is never 0
        if (numOutputs == 2) {
          EXPECT_EQ(keep, r.outputs[1].getAsDouble(i) != 0) << i;
        }
        want.setFromDouble(i, keep ? proj.getAsDouble(i) / (1.0 - ratio) : 0.0);
      }
      EXPECT_TRUE(allClose(r.dx, want, 1e-5, 1e-6)) << "opset " << opset << ", " << numOutputs;
    }
    // The same seed redraws the same mask, so finite differences see a linear map.
    expectGradientsMatch(dropout(opset, attrs({{"ratio", ratio}}), 1), {x});
  }
}

TEST(DropoutForms, SeedAttributeChangesTheMaskReproducibly) {
  auto x = randomTensor({200}, 6, 0.5f, 1.5f);
  auto mask = [&](int64_t seed) {
    auto a = attrs({{"ratio", 0.5f}, {"training_mode", int64_t{1}}, {"seed", seed}});
    return runForward(dropout(13, a, 2), {x})[1].toVector<bool>();
  };
  EXPECT_EQ(mask(1), mask(1));
  EXPECT_NE(mask(1), mask(2));
}

// The mask is drawn over chunks of the tensor in parallel: the same bits whatever the thread
// count, the gradient follows the mask, and no chunk repeats another's draw (an odd length ends
// in a lone element).
TEST(DropoutForms, MaskDoesNotDependOnTheThreadCount) {
  const int64_t n = 3 * device::kParallelChunk + 1;
  const HostTensor x = randomTensor({n}, 8, 0.5f, 1.5f);
  const HostTensor proj = randomTensor({n}, 9);
  const auto a = attrs({{"ratio", 0.3f}, {"training_mode", int64_t{1}}});
  const int before = device::kernelThreadsForThisThread();
  std::vector<testing::Run> runs;
  for (int threads : {1, 2, 3}) {
    device::setKernelThreadsForThisThread(threads);
    runs.push_back(runWithGradient(dropout(13, a, 2), x, proj));
  }
  device::setKernelThreadsForThisThread(before);
  for (size_t k = 1; k < runs.size(); ++k) {
    EXPECT_TRUE(allClose(runs[k].outputs[0], runs[0].outputs[0], 0.0, 0.0)) << k;
    EXPECT_EQ(runs[k].outputs[1].toVector<bool>(), runs[0].outputs[1].toVector<bool>()) << k;
    EXPECT_TRUE(allClose(runs[k].dx, runs[0].dx, 0.0, 0.0)) << k;
  }
  const std::vector<bool> mask = runs[0].outputs[1].toVector<bool>();
  const auto chunk = static_cast<std::ptrdiff_t>(device::kParallelChunk);
  EXPECT_FALSE(std::equal(mask.begin(), mask.begin() + chunk, mask.begin() + chunk));
  const auto kept = std::count(mask.begin(), mask.end(), true);
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(n), 0.7, 0.01);
  for (int64_t i = 0; i < n; i += 997) {
    const double want = mask[static_cast<size_t>(i)] ? proj.getAsDouble(i) / 0.7 : 0.0;
    EXPECT_NEAR(runs[0].dx.getAsDouble(i), want, 1e-5 * (1.0 + std::abs(want))) << i;
  }
}

TEST(DropoutForms, FloatMaskWithFloat16Data) {
  HostTensor x(TensorInfo(DataType::FLOAT16, {64}));
  for (int64_t i = 0; i < 64; ++i) x.setFromDouble(i, 1.0);
  auto out = runForward(dropout(8, attrs({{"ratio", 0.5f}}), 2), {x});
  EXPECT_EQ(out[1].info(), TensorInfo(DataType::FLOAT16, {64}));
  for (int64_t i = 0; i < 64; ++i) {
    const double m = out[1].getAsDouble(i);
    EXPECT_TRUE(m == 0.0 || m == 1.0);
    EXPECT_EQ(out[0].getAsDouble(i), m * 2.0);
  }
}

}  // namespace
}  // namespace xtrain::testing
