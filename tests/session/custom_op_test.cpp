// Custom ops registered through the public API (include/xtrain/customop.hpp): forward against a
// double reference, gradients against finite differences, FLOAT16 promotion, registration errors,
// and a custom op in a model built with the Builder, imported and trained by a TrainingSession.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "ir/onnx/onnx_import.hpp"
#include "testing/op_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/customop.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/session.hpp"

namespace xtrain {
namespace {

using testing::addOp;
using testing::allClose;
using testing::attrs;
using testing::expectError;
using testing::expectGradientsMatch;
using testing::randomTensor;
using testing::runForward;

constexpr const char* kDomain = "com.xtrain.test";

std::vector<TensorInfo> sameAsInput0(const std::vector<TensorInfo>& in, const CustomOpAttributes&) {
  if (in.at(0).dataType() != DataType::FLOAT && in.at(0).dataType() != DataType::FLOAT16) {
    throw error("input 0 is {}; expected FLOAT or FLOAT16", in[0].toString());
  }
  return {in[0]};
}

// y = alpha * x / (1 + |x|); its gradient is the custom op ScaledSoftsignGrad.
CustomOpDefinition scaledSoftsign() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "ScaledSoftsign", 1)};
  d.attributeNames = {"alpha"};
  d.inferShapes = sameAsInput0;
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes& a) -> CustomOpKernel {
    const float alpha = customOpAttribute<float>(a, "alpha", 1.0f);
    const int64_t n = in[0].nelms();
    return [alpha, n](const CustomOpKernelArgs& args) {
      const float* x = args.input<float>(0);
      float* y = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] / (1.0f + std::fabs(x[i]));
    };
  };
  d.grad = [](CustomOpGradBuilder& g) {
    const TensorId gx =
        g.op(kDomain, "ScaledSoftsignGrad", {g.gradOut(0), g.input(0)}, 1, g.attributes())[0];
    g.setGradIn(0, gx);
  };
  return d;
}

// gx = gy * alpha / (1 + |x|)^2.
CustomOpDefinition scaledSoftsignGrad() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "ScaledSoftsignGrad", 1)};
  d.minInputs = d.maxInputs = 2;
  d.attributeNames = {"alpha"};
  d.inferShapes = [](const std::vector<TensorInfo>& in, const CustomOpAttributes&) {
    if (in.at(0) != in.at(1)) throw error("gy {} and x {} differ", in[0], in[1]);
    return std::vector<TensorInfo>{in[1]};
  };
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes& a) -> CustomOpKernel {
    const float alpha = customOpAttribute<float>(a, "alpha", 1.0f);
    const int64_t n = in[0].nelms();
    return [alpha, n](const CustomOpKernelArgs& args) {
      const float* gy = args.input<float>(0);
      const float* x = args.input<float>(1);
      float* gx = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) {
        const float d1 = 1.0f + std::fabs(x[i]);
        gx[i] = gy[i] * alpha / (d1 * d1);
      }
    };
  };
  return d;
}

// y = x^3, with its gradient 3 x^2 gy emitted as standard ONNX ops; registered by the static
// registrar below, as a user's shared library would.
CustomOpDefinition cube() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "Cube", 1)};
  d.inferShapes = sameAsInput0;
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes&) -> CustomOpKernel {
    const int64_t n = in[0].nelms();
    return [n](const CustomOpKernelArgs& args) {
      const float* x = args.input<float>(0);
      float* y = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
    };
  };
  d.grad = [](CustomOpGradBuilder& g) {
    const TensorId x = g.input(0);
    const TensorId x2 = g.op("", "Mul", {x, x})[0];
    const TensorId three = g.constant({3.0f}, {});
    g.setGradIn(0, g.op("", "Mul", {g.op("", "Mul", {x2, three})[0], g.gradOut(0)})[0]);
  };
  return d;
}

// Not differentiable: no gradient function.
CustomOpDefinition opaque() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "Opaque", 1)};
  d.inferShapes = sameAsInput0;
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes&) -> CustomOpKernel {
    const int64_t n = in[0].nelms();
    return [n](const CustomOpKernelArgs& args) {
      std::copy_n(args.input<float>(0), n, args.output<float>(0));
    };
  };
  return d;
}

// Sum of any number (>= 1) of inputs of one shape: a variadic op.
CustomOpDefinition addAll() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "AddAll", 1)};
  d.maxInputs = -1;
  d.inferShapes = [](const std::vector<TensorInfo>& in, const CustomOpAttributes&) {
    for (const auto& t : in) {
      if (t != in[0]) throw error("inputs {} and {} differ", in[0], t);
    }
    return std::vector<TensorInfo>{in[0]};
  };
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes&) -> CustomOpKernel {
    const int64_t n = in[0].nelms();
    return [n](const CustomOpKernelArgs& args) {
      float* y = args.output<float>(0);
      std::copy_n(args.input<float>(0), n, y);
      for (size_t k = 1; k < args.inputs.size(); ++k) {
        const float* x = args.input<float>(k);
        for (int64_t i = 0; i < n; ++i) y[i] += x[i];
      }
    };
  };
  return d;
}

// x * scale, with scale [1] an optional input (1 when absent): the op sees maxInputs entries, an
// absent one with an unset info and a null buffer.
CustomOpDefinition maybeScale() {
  CustomOpDefinition d{OperatorIdentifier(kDomain, "MaybeScale", 1)};
  d.maxInputs = 2;
  d.inferShapes = [](const std::vector<TensorInfo>& in, const CustomOpAttributes&) {
    if (in.size() != 2) throw error("expected 2 input infos, got {}", in.size());
    if (in[1].isSet() && in[1].shape() != Shape{1}) throw error("scale is {}; expected [1]", in[1]);
    return std::vector<TensorInfo>{in[0]};
  };
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes&) -> CustomOpKernel {
    if (in.size() != 2) throw error("expected 2 input infos, got {}", in.size());
    const int64_t n = in[0].nelms();
    return [n](const CustomOpKernelArgs& args) {
      const float s = args.inputs[1] != nullptr ? args.input<float>(1)[0] : 1.0f;
      for (int64_t i = 0; i < n; ++i) args.output<float>(0)[i] = s * args.input<float>(0)[i];
    };
  };
  return d;
}

XTRAIN_REGISTER_CUSTOM_OP(cube());

void registerOnce() {
  static const bool done = [] {
    registerCustomOp(scaledSoftsign());
    registerCustomOp(scaledSoftsignGrad());
    registerCustomOp(opaque());
    registerCustomOp(addAll());
    registerCustomOp(maybeScale());
    CustomOpDefinition v2 = opaque();
    v2.id = OperatorIdentifier(kDomain, "SinceTwo", 2);
    registerCustomOp(v2);
    return true;
  }();
  (void)done;
}

HostTensor softsignReference(const HostTensor& x, double alpha) {
  HostTensor y(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) {
    const double v = x.data<float>()[i];
    y.data<float>()[i] = static_cast<float>(alpha * v / (1.0 + std::fabs(v)));
  }
  return y;
}

TEST(CustomOp, ForwardMatchesReference) {
  registerOnce();
  const HostTensor x = randomTensor({3, 5, 7}, 1, -3.0f, 3.0f);
  auto out = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "ScaledSoftsign", in, attrs({{"alpha", 2.5f}}), 1, kDomain, 1);
      },
      {x});
  EXPECT_TRUE(allClose(out.at(0), softsignReference(x, 2.5), 1e-6, 1e-6));

  out = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "Cube", in, {}, 1, kDomain, 1);
      },
      {x});
  HostTensor ref(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) {
    const double v = x.data<float>()[i];
    ref.data<float>()[i] = static_cast<float>(v * v * v);
  }
  EXPECT_TRUE(allClose(out.at(0), ref, 1e-6, 1e-6));
}

TEST(CustomOp, GradientsMatchFiniteDifferences) {
  registerOnce();
  // Via the custom grad op.
  expectGradientsMatch(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "ScaledSoftsign", in, attrs({{"alpha", 1.5f}}), 1, kDomain, 1);
      },
      {randomTensor({4, 6}, 2, -2.0f, 2.0f)});
  // Via standard ONNX ops, composed with a built-in op on both sides.
  expectGradientsMatch(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        const TensorId s = addOp(g, "Mul", {in[0], in[1]})[0];
        return addOp(g, "Tanh", addOp(g, "Cube", {s}, {}, 1, kDomain, 1));
      },
      {randomTensor({2, 3}, 3), randomTensor({2, 3}, 4)});
}

TEST(CustomOp, Float16RunsPromoted) {
  registerOnce();
  const HostTensor x = randomTensor({16}, 5, -3.0f, 3.0f).castTo(DataType::FLOAT16);
  auto out = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "ScaledSoftsign", in, attrs({{"alpha", 2.0f}}), 1, kDomain, 1);
      },
      {x});
  ASSERT_EQ(out.at(0).dataType(), DataType::FLOAT16);
  const HostTensor ref = softsignReference(x.castTo(DataType::FLOAT), 2.0);
  EXPECT_TRUE(allClose(out[0].castTo(DataType::FLOAT), ref, 2e-3, 2e-3));
}

TEST(CustomOp, ShapeFunctionErrorsNameTheNode) {
  registerOnce();
  HostTensor ints(TensorInfo(DataType::INT32, {3}));
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "ScaledSoftsign", in, {}, 1, kDomain, 1);
            },
            {ints});
      },
      {"ScaledSoftsign", kDomain, "input 0 is INT32[3]; expected FLOAT or FLOAT16"});
  // The model imports the domain at an opset older than the op.
  auto builder = Builder::create();
  TensorId x = builder->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  TensorId y = builder->customOp("SinceTwo", 1, kDomain, {x}, {}, 1, "old")[0];
  builder->addOutputTensor(y);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  expectError(
      [&] {
        InferenceSession::createFromOnnxModel(builder->getModelProto(),
                                              DataFlow(1, {{y, AnchorReturnType("ALL")}}), device);
      },
      {"SinceTwo", "'old'", "since version 2", "opset 1"});
}

TEST(CustomOp, WithoutGradientIsNotDifferentiable) {
  registerOnce();
  expectError(
      [&] {
        expectGradientsMatch(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "Opaque", in, {}, 1, kDomain, 1);
            },
            {randomTensor({2}, 1)});
      },
      {"Opaque", "has no gradient"});
}

TEST(CustomOp, GradientFunctionErrorsNameTheNode) {
  CustomOpDefinition d = opaque();
  d.id = OperatorIdentifier(kDomain, "BadGrad");
  d.grad = [](CustomOpGradBuilder& g) { g.setGradIn(0, g.input(5)); };
  static const bool registered = (registerCustomOp(d), true);
  (void)registered;
  expectError(
      [&] {
        expectGradientsMatch(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "BadGrad", in, {}, 1, kDomain, 1);
            },
            {randomTensor({2}, 1)});
      },
      {"BadGrad", "asked for input 5; the node has 1"});
}

TEST(CustomOp, RegistrationErrors) {
  registerOnce();
  expectError([] { registerCustomOp(scaledSoftsign()); },
              {"com.xtrain.test::ScaledSoftsign", "already registered"});
  expectError([] { registerCustomOp(cube()); }, {"com.xtrain.test::Cube", "already registered"});
  CustomOpDefinition noShape = opaque();
  noShape.id = OperatorIdentifier(kDomain, "NoShape");
  noShape.inferShapes = nullptr;
  expectError([&] { registerCustomOp(noShape); }, {"NoShape", "no shape function"});
  CustomOpDefinition noKernel = opaque();
  noKernel.id = OperatorIdentifier(kDomain, "NoKernel");
  noKernel.kernel = nullptr;
  expectError([&] { registerCustomOp(noKernel); }, {"NoKernel", "no kernel factory"});
  for (const char* domain : {"", "ai.onnx", "ai.graphcore", "ai.xtrain"}) {
    CustomOpDefinition reserved = opaque();
    reserved.id = OperatorIdentifier(domain, "Relu");
    expectError([&] { registerCustomOp(reserved); }, {"Relu", "domain of their own"});
  }
  EXPECT_FALSE(isCustomOpRegistered(kDomain, "NoShape"));
  EXPECT_FALSE(isCustomOpRegistered(kDomain, "NoKernel"));
  EXPECT_TRUE(isCustomOpRegistered(kDomain, "Cube"));
  EXPECT_FALSE(isCustomOpRegistered("ai.onnx", "Relu"));
}

// A custom op whose kernel factory refuses every node.
void registerRefuses() {
  CustomOpDefinition d = opaque();
  d.id = OperatorIdentifier(kDomain, "Refuses");
  d.kernel = [](const std::vector<TensorInfo>&, const std::vector<TensorInfo>&,
                const CustomOpAttributes&) -> CustomOpKernel {
    throw error("this kernel wants a rank-2 input");
  };
  static const bool registered = (registerCustomOp(d), true);
  (void)registered;
}

// A static registrar cannot throw: a refused registration prints the error and aborts.
TEST(CustomOpDeathTest, RefusedStaticRegistrationAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH({ const CustomOpRegistrar again(cube()); },
               "com.xtrain.test::Cube is already registered");
}

TEST(CustomOp, KernelFactoryRefusalNamesTheNode) {
  registerRefuses();
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "Refuses", in, {}, 1, kDomain, 1);
            },
            {randomTensor({2}, 1)});
      },
      {"Refuses", "this kernel wants a rank-2 input"});
}

// A model built with Builder::customOp, serialized, imported (ONNX checker included) and trained
// one SGD step on `replicas` local replicas (their kernels run on threads of their own): the
// losses and the updated weight match a double reference.
void trainOneStep(int64_t replicas) {
  registerOnce();
  const Shape shape{4, 3};
  const HostTensor w0 = randomTensor(shape, 8, -1.0f, 1.0f);
  const HostTensor x0 = randomTensor({replicas, 4, 3}, 9, -2.0f, 2.0f);
  const float alpha = 2.0f, lr = 0.1f;

  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  TensorId x = builder->addInputTensor(TensorInfo(DataType::FLOAT, shape), "x");
  std::vector<float> wv(w0.data<float>(), w0.data<float>() + w0.nelms());
  TensorId w = builder->addInitializedInputTensor(ConstVoidData::fromVector<float>(shape, wv), "w");
  TensorId y = builder->customOp("ScaledSoftsign", 1, kDomain, {onnx.mul({x, w})},
                                 {{"alpha", alpha}}, 1, "softsign")[0];
  // The op's own shape function, through the ONNX schema its registration added.
  EXPECT_EQ(builder->getTensorShape(y), shape);
  TensorId loss = builder->aiGraphcoreOpset1().identityloss({y}, ReductionType::Sum);
  builder->addOutputTensor(loss);

  SessionOptions options;
  options.enableReplicatedGraphs = replicas > 1;
  options.replicatedGraphCount = replicas;
  options.accumulationAndReplicationReductionType = ReductionType::Mean;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(replicas)}});
  auto s = TrainingSession::createFromOnnxModel(builder->getModelProto(),
                                                DataFlow(1, {{loss, AnchorReturnType("ALL")}}),
                                                loss, ConstSGD(lr), device, {}, options);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> xv(x0.data<float>(), x0.data<float>() + x0.nelms());
  std::vector<float> losses(static_cast<size_t>(replicas));
  NDArrayWrapper<float> xa(xv.data(), s->expectedInputBufferShape(x));
  NDArrayWrapper<float> la(losses.data(), s->expectedAnchorBufferShape(loss));
  StepIO io({{x, xa}}, {{loss, la}});
  s->run(io);
  s->weightsToHost();
  HostTensor w1(TensorInfo(DataType::FLOAT, shape));
  WeightsIO wio;
  wio.insert(w, {w1.raw(), w1.info()});
  s->readWeights(wio);

  std::vector<double> grad(static_cast<size_t>(w0.nelms()), 0.0);
  for (int64_t r = 0; r < replicas; ++r) {
    double refLoss = 0;
    for (int64_t i = 0; i < w0.nelms(); ++i) {
      const double xi = x0.data<float>()[r * w0.nelms() + i], wi = w0.data<float>()[i];
      const double z = xi * wi, d = 1.0 + std::fabs(z);
      refLoss += alpha * z / d;
      grad[static_cast<size_t>(i)] += alpha / (d * d) * xi / static_cast<double>(replicas);
    }
    EXPECT_NEAR(losses[static_cast<size_t>(r)], refLoss, 1e-4 * (1.0 + std::fabs(refLoss)))
        << "replica " << r;
  }
  HostTensor refW(w0.info());
  for (int64_t i = 0; i < w0.nelms(); ++i) {
    refW.data<float>()[i] =
        static_cast<float>(w0.data<float>()[i] - lr * grad[static_cast<size_t>(i)]);
  }
  EXPECT_TRUE(allClose(w1, refW, 1e-5, 1e-6)) << replicas << " replicas";
}

TEST(CustomOp, BuilderModelImportsAndTrains) {
  trainOneStep(1);
}
TEST(CustomOp, BuilderModelTrainsOnReplicas) {
  trainOneStep(2);
}

// A kernel that takes FLOAT16 itself (supportsFloat16) gets FLOAT16 buffers; a kernel factory's
// refusal of a FLOAT16 node is its own message, not the promotion's.
TEST(CustomOp, Float16KernelsAndRefusals) {
  CustomOpDefinition d = opaque();
  d.id = OperatorIdentifier(kDomain, "HalfCopy");
  d.supportsFloat16 = true;
  d.kernel = [](const std::vector<TensorInfo>& in, const std::vector<TensorInfo>&,
                const CustomOpAttributes&) -> CustomOpKernel {
    if (in[0].dataType() != DataType::FLOAT16) throw error("HalfCopy wants FLOAT16, got {}", in[0]);
    const int64_t bytes = in[0].nbytes();
    return [bytes](const CustomOpKernelArgs& args) {
      std::copy_n(static_cast<const char*>(args.inputs[0]), bytes,
                  static_cast<char*>(args.outputs[0]));
    };
  };
  static const bool registered = (registerCustomOp(d), true);
  (void)registered;
  const HostTensor x = randomTensor({7}, 5).castTo(DataType::FLOAT16);
  auto out = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "HalfCopy", in, {}, 1, kDomain, 1);
      },
      {x});
  EXPECT_TRUE(allClose(out.at(0).castTo(DataType::FLOAT), x.castTo(DataType::FLOAT), 0, 0));
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "HalfCopy", in, {}, 1, kDomain, 1);
            },
            {randomTensor({7}, 5)});
      },
      {"HalfCopy", "wants FLOAT16, got FLOAT[7]"});
  registerRefuses();
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "Refuses", in, {}, 1, kDomain, 1);
            },
            {randomTensor({2}, 1).castTo(DataType::FLOAT16)});
      },
      {"Refuses", "this kernel wants a rank-2 input"});
}

TEST(CustomOp, OptionalInputIsUnsetAndNull) {
  registerOnce();
  const HostTensor x = randomTensor({5}, 3);
  HostTensor scale(TensorInfo(DataType::FLOAT, {1}));
  scale.data<float>()[0] = -2.0f;
  auto withScale = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "MaybeScale", in, {}, 1, kDomain, 1);
      },
      {x, scale});
  auto without = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& in) {
        return addOp(g, "MaybeScale", {in[0], ""}, {}, 1, kDomain, 1);
      },
      {x});
  HostTensor twice(x.info());
  for (int64_t i = 0; i < x.nelms(); ++i) twice.data<float>()[i] = -2.0f * x.data<float>()[i];
  EXPECT_TRUE(allClose(withScale.at(0), twice));
  EXPECT_TRUE(allClose(without.at(0), x));
}

// A model file on disk with a variadic custom op and a custom op with an attribute, imported by
// path (ONNX checker included) and run.
TEST(CustomOp, ModelFileImportsAndRuns) {
  registerOnce();
  const Shape shape{2, 3};
  auto builder = Builder::create();
  TensorId x = builder->addInputTensor(TensorInfo(DataType::FLOAT, shape), "x");
  TensorId s = builder->customOp("ScaledSoftsign", 1, kDomain, {x}, {{"alpha", 3.0f}})[0];
  TensorId y = builder->customOp(OperatorIdentifier(kDomain, "AddAll"), 1, {x, s, x}, 1)[0];
  EXPECT_EQ(builder->getTensorShape(y), shape);
  builder->addOutputTensor(y);
  const std::string path =
      ::testing::TempDir() + "custom_op_model_" + std::to_string(getpid()) + ".onnx";
  builder->saveModelProto(path);

  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  auto session = InferenceSession::createFromOnnxModel(
      path, DataFlow(1, {{y, AnchorReturnType("ALL")}}), device);
  std::remove(path.c_str());
  session->prepareDevice();
  session->weightsFromHost();
  const HostTensor x0 = randomTensor(shape, 12, -2.0f, 2.0f);
  std::vector<float> xv(x0.data<float>(), x0.data<float>() + x0.nelms());
  HostTensor out(TensorInfo(DataType::FLOAT, shape));
  NDArrayWrapper<float> xa(xv.data(), session->expectedInputBufferShape(x));
  NDArrayWrapper<float> ya(out.data<float>(), session->expectedAnchorBufferShape(y));
  StepIO io({{x, xa}}, {{y, ya}});
  session->run(io);
  HostTensor ref = softsignReference(x0, 3.0);
  for (int64_t i = 0; i < ref.nelms(); ++i) {
    ref.data<float>()[i] = static_cast<float>(2.0 * x0.data<float>()[i] + ref.data<float>()[i]);
  }
  EXPECT_TRUE(allClose(out, ref, 1e-6, 1e-6));
}

TEST(CustomOp, BuilderInferenceReportsTheShapeFunctionsError) {
  registerOnce();
  auto builder = Builder::create();
  TensorId x = builder->addInputTensor(TensorInfo(DataType::INT32, {3}), "x");
  TensorId y = builder->customOp("ScaledSoftsign", 1, kDomain, {x}, {}, 1, "bad")[0];
  expectError([&] { builder->getTensorShape(y); },
              {"ScaledSoftsign", "input 0 is INT32[3]; expected FLOAT or FLOAT16"});
}

// A node of a domain nobody registered is an unsupported op like any other. (With the checker on,
// the import stops earlier: ONNX cannot type the node's outputs, so a graph output it produces is
// untyped.)
TEST(CustomOp, UnregisteredCustomOpIsAnUnsupportedOp) {
  auto builder = Builder::create();
  TensorId x = builder->addInputTensor(TensorInfo(DataType::FLOAT, {3}), "x");
  TensorId y = builder->customOp("Nope", 1, "com.nobody", {x}, {}, 1, "nope")[0];
  builder->addOutputTensor(y);
  ir::OnnxImportOptions options;
  options.runChecker = false;
  expectError([&] { ir::importOnnxModel(builder->getModelProto(), options); },
              {"Nope", "com.nobody", "'nope'"});
}

}  // namespace
}  // namespace xtrain
