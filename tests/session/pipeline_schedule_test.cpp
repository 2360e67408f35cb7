// The schedule of pipelined stages on their threads (ReplicaRuntime::runPipeline,
// docs/pipelining.md "Schedule"): no barrier at the end of each cycle, so a stage may run ahead of
// a slow one as far as its stashes and the host's I/O allow. A custom op that sleeps makes one
// stage slow, so that the others run ahead: training still reaches the unpipelined weights bit for
// bit, the host's IStepIO calls come in the order of the stages-in-turn schedule, and an input
// callback that throws ends the run with its error.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/session_log.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/customop.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::testing {
namespace {

constexpr const char* kDomain = "com.xtrain.pipeline_test";
constexpr int64_t kBatch = 2, kIn = 6, kHidden = 8, kOut = 4;

// y = x, after sleeping `micros` microseconds; its gradient is another Pause of the same length.
CustomOpDefinition pause() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "Pause", 1)};
  d.attributeNames = {"micros"};
  d.inferShapes = [](const std::vector<TensorInfo>& in, const CustomOpAttributes&) {
    return std::vector<TensorInfo>{in.at(0)};
  };
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes& a) -> CustomOpKernel {
    const int64_t micros = customOpAttribute<int64_t>(a, "micros", 0);
    const int64_t n = in[0].nelms();
    return [micros, n](const CustomOpKernelArgs& args) {
      std::this_thread::sleep_for(std::chrono::microseconds(micros));
      const float* x = args.input<float>(0);
      float* y = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    };
  };
  d.grad = [](CustomOpGradBuilder& g) {
    g.setGradIn(0, g.op(kDomain, "Pause", {g.gradOut(0)}, 1, g.attributes())[0]);
  };
  return d;
}

void registerPause() {
  static const bool registered = (registerCustomOp(pause()), true);
  (void)registered;
}

struct Model {
  std::string proto;
  TensorId x, loss, w3;
};

// x -> [IPU 0] h1 = x W1 -> [IPU 1] h2 = pause(sigmoid(h1 W2)) -> [IPU 2] the mean of |(h2 + h1)
// W3|. h1 is stashed from slot 0 to slot 3 (IPU 1's backward): a ring written on one thread and
// read last on another. The host writes only x, which slot 0 reads: without an anchor, nothing but
// the rings holds IPU 0 back. Unplaced (`placed` false), the reference.
Model buildModel(bool placed, int64_t pauseMicros) {
  registerPause();
  Model m;
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  auto place = [&](int64_t ipu) {
    if (!placed) return;
    if (ipu > 0) {
      b->clearAttribute("__ipu_number");
      b->clearAttribute("__pipeline_stage");
    }
    b->setAttribute("__ipu_number", ipu);
    b->setAttribute("__pipeline_stage", ipu);
  };
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kBatch, kIn}), "x");
  const TensorId w1 = weight({kIn, kHidden}, "W1"), w2 = weight({kHidden, kHidden}, "W2");
  const TensorId w3 = m.w3 = weight({kHidden, kOut}, "W3");
  place(0);
  const TensorId h1 = onnx.matmul({m.x, w1});
  place(1);
  const TensorId h2 = b->customOp("Pause", 1, kDomain, {onnx.sigmoid({onnx.matmul({h1, w2})})},
                                  {{"micros", pauseMicros}})[0];
  place(2);
  m.loss = onnx.reducemean({onnx.abs({onnx.matmul({onnx.add({h2, h1}), w3})})}, {}, 0);
  if (placed) {
    b->clearAttribute("__ipu_number");
    b->clearAttribute("__pipeline_stage");
  }
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

std::unique_ptr<TrainingSession> makeSession(const Model& m, bool pipelined, int64_t af,
                                             bool anchorLoss, bool anchorW3 = false) {
  SessionOptions o;
  o.enableGradientAccumulation = true;
  o.accumulationFactor = af;
  if (pipelined) {
    o.virtualGraphMode = VirtualGraphMode::Manual;
    o.enablePipelining = true;
  }
  auto s = TrainingSession::createFromOnnxModel(
      m.proto,
      anchorW3     ? DataFlow(1, {{m.w3, AnchorReturnType("ALL")}})
      : anchorLoss ? DataFlow(1, {m.loss})
                   : DataFlow(1),
      m.loss, ConstSGD(0.05f, 0.01f, 0.9f),
      DeviceManager::createDeviceManager().createIpuModelDevice(
          {{"numIPUs", pipelined ? "3" : "1"}}),
      {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

std::vector<float> drawBatch(int64_t af, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(af * kBatch * kIn));
  for (auto& v : x) v = normal(rng);
  return x;
}

// Three steps without anchors; writes the model to `path`.
void train(const Model& m, bool pipelined, int64_t af, const std::string& path) {
  auto s = makeSession(m, pipelined, af, false);
  for (unsigned step = 0; step < 3; ++step) {
    std::vector<float> x = drawBatch(af, 40 + step);
    NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
    StepIO io({{m.x, xa}}, {});
    s->run(io);
  }
  s->modelToHost(path);
}

using PipelineSchedule = ScratchDirTest;

// IPU 1 sleeps in its forward and its backward, so IPU 0 runs ahead until h1's ring holds it.
TEST_F(PipelineSchedule, StagesAheadOfASlowStageTrainToTheUnpipelinedWeightsBitForBit) {
  for (int64_t af : {5, 12}) {
    SCOPED_TRACE("af " + std::to_string(af));
    const std::string a = path("reference.onnx"), b = path("pipelined.onnx");
    train(buildModel(false, 0), false, af, a);
    train(buildModel(true, 1500), true, af, b);
    expectSameInitializers(a, b, 0);
  }
}

using PipelineUpdate = SessionLogTest;

// Each IPU updates its own weights on its stage thread (PipelinePlan::updateGroups): the update's
// ops are the unpipelined run's, so the weights above match bit for bit; here, that it happens.
TEST_F(PipelineUpdate, EachIpuUpdatesItsWeightsOnItsStageThread) {
  train(buildModel(true, 0), true, 5, path("model.onnx"));
  const std::string log = logText();
  EXPECT_NE(log.find("each of 3 IPUs updates its weights on its stage thread"), std::string::npos)
      << log;
}

// The last stage updates its weights as soon as its slots are done, beside the first stage's
// flush (SessionImpl::updatesInPipeline): the weights above match bit for bit; here, that it
// happens, and that it does not when the host reads a weight after each micro-batch.
TEST_F(PipelineUpdate, EachIpuUpdatesAsSoonAsItsSlotsAreDone) {
  train(buildModel(true, 0), true, 5, path("model.onnx"));
  EXPECT_NE(logText().find("each IPU updates its weights as soon as its slots are done"),
            std::string::npos)
      << logText();
}

// W3's anchor of every micro-batch, read by the host after the slot that reads W3 last: the last
// micro-batch's is still the weight before the update, as unpipelined, although IPU 2 is done
// long before IPU 1 (which sleeps) and IPU 0 are.
std::vector<float> anchoredW3(const Model& m, bool pipelined, int64_t af) {
  auto s = makeSession(m, pipelined, af, false, true);
  std::vector<float> w3(static_cast<size_t>(2 * af * kHidden * kOut));
  for (unsigned step = 0; step < 2; ++step) {
    std::vector<float> x = drawBatch(af, 60 + step);
    NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
    NDArrayWrapper<float> wa(w3.data() + step * af * kHidden * kOut, Shape{af, kHidden, kOut});
    StepIO io({{m.x, xa}}, {{m.w3, wa}});
    s->run(io);
  }
  return w3;
}

TEST_F(PipelineUpdate, AWeightReadEveryMicroBatchWaitsForTheUpdateAfterThePipeline) {
  const std::vector<float> reference = anchoredW3(buildModel(false, 0), false, 5);
  const std::vector<float> pipelined = anchoredW3(buildModel(true, 2000), true, 5);
  EXPECT_EQ(pipelined, reference);
  EXPECT_EQ(logText().find("as soon as its slots are done"), std::string::npos) << logText();
}

// The IStepIO calls (which input or output, in which order) of one step.
std::vector<std::string> callOrder(const Model& m, bool stageThreads) {
  if (!stageThreads) ::setenv("XTRAIN_PIPELINE_THREADS", "0", 1);
  auto s = makeSession(m, true, 6, true);
  ::unsetenv("XTRAIN_PIPELINE_THREADS");
  std::vector<float> x = drawBatch(6, 7);
  std::vector<float> loss(6);
  std::vector<std::string> calls;
  size_t nextX = 0, nextLoss = 0;
  StepIOCallback io(
      [&](const TensorId& id, bool) {
        calls.push_back("in " + id);
        return ConstVoidData(x.data() + kBatch * kIn * nextX++,
                             TensorInfo(DataType::FLOAT, {kBatch, kIn}));
      },
      [&](const TensorId&) {},
      [&](const TensorId& id) {
        calls.push_back("out " + id);
        return MutableVoidData(loss.data() + nextLoss++, TensorInfo(DataType::FLOAT, Shape{}));
      },
      [&](const TensorId&) {});
  s->run(io);
  EXPECT_EQ(nextLoss, 6U);
  return calls;
}

TEST(PipelineScheduleHost, StageThreadsCallTheStepIoInTheOrderOfTheStagesInTurn) {
  const Model m = buildModel(true, 300);
  const std::vector<std::string> inTurn = callOrder(m, false);
  ASSERT_EQ(inTurn.size(), 12U);  // 6 micro-batches: x and the loss of each
  EXPECT_EQ(callOrder(m, true), inTurn);
}

// The host fails while the stages run: run() ends with the callback's error, the stages stopped.
TEST(PipelineScheduleHost, AnInputCallbackThatThrowsEndsTheRunWithItsError) {
  const Model m = buildModel(true, 300);
  auto s = makeSession(m, true, 6, true);
  std::vector<float> x = drawBatch(6, 7);
  std::vector<float> loss(6);
  int inputs = 0;
  StepIOCallback io(
      [&](const TensorId& id, bool) {
        if (++inputs == 4) throw error("no more data for '{}'", id);
        return ConstVoidData(x.data(), TensorInfo(DataType::FLOAT, {kBatch, kIn}));
      },
      [&](const TensorId&) {},
      [&](const TensorId&) {
        return MutableVoidData(loss.data(), TensorInfo(DataType::FLOAT, Shape{}));
      },
      [&](const TensorId&) {});
  const std::string what = errorOf([&] { s->run(io); });
  EXPECT_NE(what.find("no more data for"), std::string::npos) << what;
  s.reset();
}

}  // namespace
}  // namespace xtrain::testing
