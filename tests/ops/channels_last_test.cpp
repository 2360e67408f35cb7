// Channels-last lowering (session/layout_plan.hpp): a small residual conv net with BatchNorm, run
// with every buffer plain and with channels-last activations, must give the same loss, gradients
// and BatchNorm statistics (to 1e-5 relative); the layout plan must keep host-read tensors plain.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "device/kernels/kernel_threads.hpp"
#include "ir/autodiff/autodiff.hpp"
#include "session/layout_plan.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

struct Net {
  ir::Graph g;
  TensorId loss;
  std::vector<TensorId> weights;
  std::vector<TensorId> compared;  // loss, gradients, BatchNorm statistics
  TensorId stemConv, stemOut, blockOut, tailBn;
};

TensorId variable(Net& n, const TensorId& id, const HostTensor& value) {
  n.g.addTensor(id, value.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(value));
  n.weights.push_back(id);
  return id;
}

// Conv (3x3, pad 1, stride s) of x into `out` channels.
TensorId conv(Net& n, const TensorId& x, int64_t in, int64_t out, int64_t stride, uint64_t seed) {
  const TensorId w = variable(n, std::string("w").append(std::to_string(seed)),
                              randomTensor({out, in, 3, 3}, seed, -0.3f, 0.3f));
  return addOp(n.g, "Conv", {x, w},
               attrs({{"pads", Shape{1, 1, 1, 1}}, {"strides", Shape{stride, stride}}}))[0];
}

// BatchNormalization over c channels; training: also the running statistics, compared.
TensorId batchNorm(Net& n, const TensorId& x, int64_t c, bool training, uint64_t seed) {
  const std::string s = std::to_string(seed);
  std::vector<TensorId> in{
      x, variable(n, std::string("scale").append(s), randomTensor({c}, seed, 0.5f, 1.5f)),
      variable(n, std::string("bias").append(s), randomTensor({c}, seed + 1))};
  for (const char* name : {"mean", "var"}) {
    const HostTensor v = randomTensor({c}, seed + 2, 0.5f, 1.5f);
    in.push_back(std::string(name).append(s));
    n.g.addTensor(in.back(), v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
  }
  Attributes a = attrs({{"training_mode", int64_t{training ? 1 : 0}}, {"momentum", 0.8f}});
  const auto outs = addOp(n.g, "BatchNormalization", in, a, training ? 3 : 1, ir::kOnnxDomain, 15);
  if (training) n.compared.insert(n.compared.end(), {outs[1], outs[2]});
  return outs[0];
}

// x [batch, 3, size, size] (default [4, 3, 12, 12]) -> stem conv 3->12 + BN + Relu -> block: conv
// 12->12 + BN + Relu, conv + BN,
// + residual, Relu -> conv 12->20 stride 2 + BN (Y read by a plain op) -> loss = sum(Y * R).
// C = 12 and 20 are not multiples of a vector; the stem's input and the tail's BN output stay
// plain, so the layout-aware kernels also see mixed layouts.
void build(Net& n, bool training, int64_t batch = 4, int64_t size = 12) {
  const TensorId x = variable(n, "x", randomTensor({batch, 3, size, size}, 1, -2.0f, 3.0f));
  n.stemConv = conv(n, x, 3, 12, 1, 10);
  n.stemOut = addOp(n.g, "Relu", {batchNorm(n, n.stemConv, 12, training, 20)})[0];
  const TensorId a =
      addOp(n.g, "Relu", {batchNorm(n, conv(n, n.stemOut, 12, 12, 1, 30), 12, training, 40)})[0];
  const TensorId b = batchNorm(n, conv(n, a, 12, 12, 1, 50), 12, training, 60);
  n.blockOut = addOp(n.g, "Relu", {addOp(n.g, "Add", {b, n.stemOut})[0]})[0];
  n.tailBn = batchNorm(n, conv(n, n.blockOut, 12, 20, 2, 70), 20, training, 80);
  const HostTensor r = randomTensor({batch, 20, size / 2, size / 2}, 90);
  n.g.addTensor("R", r.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(r));
  const TensorId prod = addOp(n.g, "Mul", {n.tailBn, "R"})[0];
  n.loss =
      addOp(n.g, "ReduceSumToShape", {prod}, attrs({{"shape", Shape{}}}), 1, ir::kXtrainDomain)[0];
  n.g.outputs().push_back(n.loss);
  const auto grads = ir::autodiff(n.g, n.loss, n.weights);
  n.compared.push_back(n.loss);
  for (const auto& [w, grad] : grads) n.compared.push_back(grad);
}

std::vector<HostTensor> runStep(const session::LoweredGraph& lowered, const Net& n) {
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  std::vector<HostTensor> out;
  for (const TensorId& id : n.compared) {
    out.push_back(buffers[static_cast<size_t>(lowered.bufferIndex(id))]);
  }
  return out;
}

void expectLayoutsAgree(bool training) {
  Net n;
  build(n, training);
  const session::LoweredGraph plain(n.g);
  session::LoweringOptions options;
  options.channelsLast = true;
  // What the test reads: the loss and gradients (in a session the optimizer reads the gradients,
  // so they stay plain anyway) and the statistics.
  options.hostRead.insert(n.compared.begin(), n.compared.end());
  const session::LoweredGraph channelsLast(n.g, options);
  // The activations between the convolutions are channels-last; the graph's input and what a
  // plain op reads are not.
  EXPECT_EQ(channelsLast.layout(n.stemOut), device::Layout::ChannelsLast);
  EXPECT_EQ(channelsLast.layout(n.blockOut), device::Layout::ChannelsLast);
  EXPECT_EQ(channelsLast.layout("x"), device::Layout::Plain);
  EXPECT_EQ(channelsLast.layout(n.tailBn), device::Layout::Plain);
  EXPECT_EQ(plain.layout(n.stemOut), device::Layout::Plain);
  const auto expected = runStep(plain, n);
  const auto actual = runStep(channelsLast, n);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    // oneDNN's weight gradients sum in a different order for nhwc than for its blocked layouts:
    // an absolute tolerance relative to the tensor's largest value covers the cancellation.
    float largest = 1.0f;
    for (float v : expected[i].span<float>()) largest = std::max(largest, std::abs(v));
    EXPECT_TRUE(allClose(actual[i], expected[i], 1e-5, 2e-5 * largest)) << n.compared[i];
  }
}

TEST(ChannelsLast, TrainingStepMatchesPlainLayouts) {
  expectLayoutsAgree(true);
}

TEST(ChannelsLast, InferenceModeBatchNormMatchesPlainLayouts) {
  expectLayoutsAgree(false);
}

// Large enough (>= 32768 elements per activation) for the BatchNorm kernels to use both threads:
// one thread and two give the same bits (fixed chunks, each channel summed in order).
TEST(ChannelsLast, ResultsDoNotDependOnTheThreadCount) {
  Net n;
  build(n, true, 8, 24);
  session::LoweringOptions options;
  options.channelsLast = true;
  options.hostRead.insert(n.compared.begin(), n.compared.end());
  const session::LoweredGraph lowered(n.g, options);
  const int threads = device::kernelThreadsForThisThread();
  std::vector<std::vector<HostTensor>> results;
  for (int t : {1, 2}) {
    device::setKernelThreadsForThisThread(t);
    results.push_back(runStep(lowered, n));
  }
  device::setKernelThreadsForThisThread(threads);
  // The BatchNorm statistics and the gradients that reach no weight through oneDNN's own
  // reductions (which may split work by thread) must be identical; oneDNN's weight gradients
  // are compared to the usual tolerance.
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(allClose(results[1][i], results[0][i], 1e-5, 1e-5)) << n.compared[i];
  }
  for (size_t i = 0; i < 8; ++i) {  // the running statistics of the four BatchNorms
    const auto a = results[0][i].span<float>();
    const auto b = results[1][i].span<float>();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << n.compared[i];
  }
}

TEST(ChannelsLast, HostReadTensorsAndTheirElementwiseGroupStayPlain) {
  Net n;
  build(n, true);
  const std::set<TensorId> all = session::channelsLastTensors(n.g, {});
  EXPECT_EQ(all.count(n.blockOut), 1u);
  EXPECT_EQ(all.count(n.stemOut), 1u);
  // blockOut is read by the host: the Relu and the residual Add around it share its layout, so
  // stemOut (an input of that Add) stays plain too; the stem's convolution output does not.
  const std::set<TensorId> cl = session::channelsLastTensors(n.g, {n.blockOut});
  EXPECT_EQ(cl.count(n.blockOut), 0u);
  EXPECT_EQ(cl.count(n.stemOut), 0u);
  EXPECT_EQ(cl.count(n.stemConv), 1u);
}

}  // namespace
}  // namespace xtrain::testing

namespace xtrain::testing {
namespace {

// A recomputation clone's output shares its original's layout: the original Conv's output is read
// by a Sigmoid (plain), so the clone's, read only by a Relu that could run channels-last, is plain
// too (the same convolution on the same layouts computes the same bits).
TEST(ChannelsLast, ARecomputationCloneTakesItsOriginalsLayout) {
  ir::Graph g;
  const HostTensor x = randomTensor({1, 2, 4, 4}, 1);
  const HostTensor w = randomTensor({2, 2, 3, 3}, 2);
  g.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  g.addTensor("w", w.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(w));
  const Attributes pads = attrs({{"pads", Shape{1, 1, 1, 1}}});
  const TensorId y = addOp(g, "Conv", {"x", "w"}, pads)[0];
  addOp(g, "Sigmoid", {y});
  ir::OpSpec spec;
  spec.type = "Conv";
  spec.inputs = {"x", "w"};
  spec.attrs = pads;
  spec.phase = ir::Phase::Backward;
  ir::Op& clone = g.addOp(spec);
  const TensorId y2 = clone.outputs[0];
  addOp(g, "Relu", {y2});
  EXPECT_EQ(session::channelsLastTensors(g, {}).count(y2), 1u) << "not a clone: channels-last";
  g.op(clone.id).recomputes = g.tensor(y).producer;
  const std::set<TensorId> cl = session::channelsLastTensors(g, {});
  EXPECT_EQ(cl.count(y), 0u);
  EXPECT_EQ(cl.count(y2), 0u);
}

}  // namespace
}  // namespace xtrain::testing
