#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "device/kernels/kernel_threads.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// ---------------------------------------------------------------------------------------------------------
// LayerNormalization

// Naive reference. Scale/B are read through `param(t, j)`: j indexes the normalised shape, mapped
// to t's (numpy-broadcast) element.
float broadcastAt(const HostTensor& t, const Shape& norm, int64_t j) {
  // Unravel j over norm, ravel over t's shape aligned to the right with broadcasting.
  const Shape& s = t.shape();
  int64_t idx = 0, stride = 1, rem = j;
  std::vector<int64_t> coord(norm.size());
  for (size_t d = norm.size(); d-- > 0;) {
    coord[d] = rem % norm[d];
    rem /= norm[d];
  }
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t ds = s.size() - 1 - k;
    const size_t dn = norm.size() - 1 - k;
    const int64_t c = s[ds] == 1 ? 0 : coord[dn];
    idx += c * stride;
    stride *= s[ds];
  }
  return t.span<float>()[static_cast<size_t>(idx)];
}

struct LayerNormRef {
  HostTensor y, mean, inv;
};

LayerNormRef refLayerNorm(const HostTensor& x, const HostTensor& scale, const HostTensor* bias,
                          int64_t axis, float eps) {
  const Shape& shape = x.shape();
  const Shape norm(shape.begin() + axis, shape.end());
  int64_t n = 1, rows = 1;
  for (auto d : norm) n *= d;
  for (int64_t d = 0; d < axis; ++d) rows *= shape[static_cast<size_t>(d)];
  Shape stat = shape;
  for (size_t d = static_cast<size_t>(axis); d < stat.size(); ++d) stat[d] = 1;
  LayerNormRef r{HostTensor(x.info()), HostTensor(TensorInfo(DataType::FLOAT, stat)),
                 HostTensor(TensorInfo(DataType::FLOAT, stat))};
  auto xs = x.span<float>();
  for (int64_t row = 0; row < rows; ++row) {
    double mean = 0;
    for (int64_t j = 0; j < n; ++j) mean += xs[static_cast<size_t>(row * n + j)];
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double d = xs[static_cast<size_t>(row * n + j)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      double v = (xs[static_cast<size_t>(row * n + j)] - mean) * inv * broadcastAt(scale, norm, j);
      if (bias != nullptr) v += broadcastAt(*bias, norm, j);
      r.y.span<float>()[static_cast<size_t>(row * n + j)] = static_cast<float>(v);
    }
    r.mean.span<float>()[static_cast<size_t>(row)] = static_cast<float>(mean);
    r.inv.span<float>()[static_cast<size_t>(row)] = static_cast<float>(inv);
  }
  return r;
}

BuildFn layerNorm(Attributes a, int numOutputs, int opset = 17) {
  return [a, numOutputs, opset](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "LayerNormalization", in, a, numOutputs, ir::kOnnxDomain, opset);
  };
}

TEST(LayerNorm, LastAxisMatchesReferenceWithStatistics) {
  auto x = randomTensor({3, 5}, 1, -2.0f, 3.0f);
  auto s = randomTensor({5}, 2, 0.5f, 1.5f);
  auto b = randomTensor({5}, 3);
  auto out = runForward(layerNorm({}, 3), {x, s, b});
  auto ref = refLayerNorm(x, s, &b, 1, 1e-5f);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[1], ref.mean, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[2], ref.inv, 1e-5, 1e-6));
}

TEST(LayerNorm, InnerAxisBroadcastParamsAtLowerOpset) {
  // Normalised shape [3,4]; Scale [4] and B [3,1] broadcast to it. Opset 13: PopART-era models.
  auto x = randomTensor({2, 3, 4}, 4, -1.0f, 2.0f);
  auto s = randomTensor({4}, 5, 0.5f, 1.5f);
  auto b = randomTensor({3, 1}, 6);
  auto out =
      runForward(layerNorm(attrs({{"axis", int64_t{-2}}, {"epsilon", 1e-3f}}), 1, 13), {x, s, b});
  EXPECT_TRUE(allClose(out[0], refLayerNorm(x, s, &b, 1, 1e-3f).y, 1e-5, 1e-5));
}

TEST(LayerNorm, WithoutBiasAndAxisZero) {
  auto x = randomTensor({2, 3}, 7);
  auto s = randomTensor({2, 3}, 8, 0.5f, 1.5f);
  auto out = runForward(layerNorm(attrs({{"axis", int64_t{0}}}), 1), {x, s});
  EXPECT_TRUE(allClose(out[0], refLayerNorm(x, s, nullptr, 0, 1e-5f).y, 1e-5, 1e-5));
}

TEST(LayerNorm, SizeOneAndSizeZeroDimensions) {
  // A normalised size of 1 gives xhat = 0, so Y = B.
  auto x = randomTensor({4, 1}, 9);
  auto s = randomTensor({1}, 10);
  auto b = HostTensor::fromVector<float>({1}, {0.25f});
  auto out = runForward(layerNorm({}, 1), {x, s, b});
  EXPECT_TRUE(
      allClose(out[0], HostTensor::fromVector<float>({4, 1}, {0.25f, 0.25f, 0.25f, 0.25f})));
  // No rows at all.
  auto e = HostTensor(TensorInfo(DataType::FLOAT, {0, 3}));
  auto s3 = randomTensor({3}, 11);
  auto out0 = runForward(layerNorm({}, 3), {e, s3});
  EXPECT_EQ(out0[0].shape(), (Shape{0, 3}));
  EXPECT_EQ(out0[1].shape(), (Shape{0, 1}));
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  auto x = randomTensor({3, 5}, 12, -2.0f, 2.0f);
  auto s = randomTensor({5}, 13, 0.5f, 1.5f);
  auto b = randomTensor({5}, 14);
  expectGradientsMatch(layerNorm({}, 1), {x, s, b});
  // Mean and InvStdDev are outputs too: their gradients reach X; Y's backward uses the saved
  // statistics.
  expectGradientsMatch(layerNorm({}, 3), {x, s, b});
}

TEST(LayerNorm, GradientsWithBroadcastParamsAndNoBias) {
  auto x = randomTensor({2, 3, 4}, 15, -2.0f, 2.0f);
  auto s = randomTensor({4}, 16, 0.5f, 1.5f);
  auto b = randomTensor({3, 1}, 17);
  expectGradientsMatch(layerNorm(attrs({{"axis", int64_t{1}}}), 1), {x, s, b});
  expectGradientsMatch(layerNorm(attrs({{"axis", int64_t{-1}}}), 2), {x, s});
}

// Many rows (the kernels spread them over threads, and the grad sums dScale and dB over fixed row
// blocks): forward against the reference; LayerNormGrad against its formula evaluated in double,
// and the same to the bit on 1 and 2 kernel threads.
TEST(LayerNorm, ManyRowsMatchReferenceOnAnyThreadCount) {
  // 8 x 1031 x 128 > 2^20 elements, so the kernels run threaded; 1031 leaves a partial row block.
  const int64_t rows = 8 * 1031, n = 128;
  auto x = randomTensor({8, 1031, n}, 30, -2.0f, 3.0f);
  auto s = randomTensor({n}, 31, 0.5f, 1.5f);
  auto b = randomTensor({n}, 32);
  auto dy = randomTensor({8, 1031, n}, 33);
  auto out = runForward(layerNorm({}, 3), {x, s, b});
  auto ref = refLayerNorm(x, s, &b, 2, 1e-5f);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[1], ref.mean, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[2], ref.inv, 1e-5, 1e-6));

  HostTensor dx(x.info()), ds(s.info()), db(s.info());
  std::vector<double> sumS(n), sumB(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double mu = ref.mean.getAsDouble(r), inv = ref.inv.getAsDouble(r);
    double meanG = 0, meanGx = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = (x.getAsDouble(r * n + j) - mu) * inv;
      const double g = dy.getAsDouble(r * n + j) * s.getAsDouble(j);
      meanG += g / static_cast<double>(n);
      meanGx += g * xhat / static_cast<double>(n);
      sumS[static_cast<size_t>(j)] += dy.getAsDouble(r * n + j) * xhat;
      sumB[static_cast<size_t>(j)] += dy.getAsDouble(r * n + j);
    }
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = (x.getAsDouble(r * n + j) - mu) * inv;
      const double g = dy.getAsDouble(r * n + j) * s.getAsDouble(j);
      dx.setFromDouble(r * n + j, inv * (g - meanG - xhat * meanGx));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    ds.setFromDouble(j, sumS[static_cast<size_t>(j)]);
    db.setFromDouble(j, sumB[static_cast<size_t>(j)]);
  }
  const BuildFn grad = [](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "LayerNormGrad", in, attrs({{"axis", int64_t{2}}, {"epsilon", 1e-5f}}), 3,
                 ir::kXtrainDomain, 0);
  };
  for (bool saved : {false, true}) {
    SCOPED_TRACE(saved ? "saved statistics" : "statistics recomputed");
    std::vector<HostTensor> in{dy, x, s};
    if (saved) in.insert(in.end(), {out[1], out[2]});
    device::setKernelThreadsForThisThread(1);
    auto one = runForward(grad, in);
    device::setKernelThreadsForThisThread(2);
    auto two = runForward(grad, in);
    EXPECT_TRUE(allClose(one[0], dx, 1e-5, 1e-5));
    EXPECT_TRUE(allClose(one[1], ds, 1e-5, 1e-5));
    EXPECT_TRUE(allClose(one[2], db, 1e-5, 1e-5));
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(std::memcmp(one[k].raw(), two[k].raw(), one[k].nbytes()), 0) << "output " << k;
    }
  }
}

TEST(LayerNorm, WrongScaleShapeNamesTheOp) {
  auto x = randomTensor({2, 4}, 18);
  auto s = randomTensor({5}, 19);
  expectError(
      [&] {
        runForward(layerNorm({}, 1), {x, s});
      },
      {"LayerNormalization", "Scale", "FLOAT[5]", "[4]"});
  auto s2 = randomTensor({1, 4}, 20);  // rank higher than the normalised shape
  expectError([&] { runForward(layerNorm({}, 1), {x, s2}); }, {"LayerNormalization", "[1,4]"});
}

TEST(LayerNorm, BadAxisAndStashTypeNameTheOp) {
  auto x = randomTensor({2, 4}, 21);
  auto s = randomTensor({4}, 22);
  expectError(
      [&] {
        runForward(layerNorm(attrs({{"axis", int64_t{2}}}), 1), {x, s});
      },
      {"LayerNormalization", "axis"});
  expectError(
      [&] {
        runForward(layerNorm(attrs({{"stash_type", int64_t{10}}}), 1), {x, s});
      },
      {"LayerNormalization", "stash_type"});
}

// ---------------------------------------------------------------------------------------------------------
// BatchNormalization

struct BatchNormRef {
  HostTensor y, runMean, runVar, mean, var;
};

// X [N, C, S...]; training computes the batch statistics (population variance). `unbiased`:
// running_var takes PyTorch's unbiased batch variance, sum((x - mean)^2) / (N*S - 1).
BatchNormRef refBatchNorm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                          const HostTensor& inMean, const HostTensor& inVar, bool training,
                          float eps, float momentum, bool unbiased = false) {
  const Shape& sh = x.shape();
  const int64_t n = sh[0], c = sh[1];
  int64_t s = 1;
  for (size_t d = 2; d < sh.size(); ++d) s *= sh[d];
  const TensorInfo stat(DataType::FLOAT, {c});
  BatchNormRef r{HostTensor(x.info()), HostTensor(stat), HostTensor(stat), HostTensor(stat),
                 HostTensor(stat)};
  auto at = [&](int64_t i, int64_t ch, int64_t k) { return (i * c + ch) * s + k; };
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = inMean.span<float>()[ch], var = inVar.span<float>()[ch], sumSq = 0;
    if (training) {
      mean = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < s; ++k) mean += x.span<float>()[at(i, ch, k)];
      mean /= static_cast<double>(n * s);
      var = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < s; ++k) {
          const double d = x.span<float>()[at(i, ch, k)] - mean;
          var += d * d;
        }
      sumSq = var;
      var /= static_cast<double>(n * s);
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < s; ++k) {
        const double v = (x.span<float>()[at(i, ch, k)] - mean) / std::sqrt(var + eps) *
                             scale.span<float>()[ch] +
                         bias.span<float>()[ch];
        r.y.span<float>()[at(i, ch, k)] = static_cast<float>(v);
      }
    r.runMean.span<float>()[ch] =
        static_cast<float>(momentum * inMean.span<float>()[ch] + (1 - momentum) * mean);
    const double runningBatchVar = unbiased ? sumSq / static_cast<double>(n * s - 1) : var;
    r.runVar.span<float>()[ch] =
        static_cast<float>(momentum * inVar.span<float>()[ch] + (1 - momentum) * runningBatchVar);
    r.mean.span<float>()[ch] = static_cast<float>(mean);
    r.var.span<float>()[ch] = static_cast<float>(var);
  }
  return r;
}

struct BnInputs {
  HostTensor x, scale, bias, mean, var;
  std::vector<HostTensor> all() const { return {x, scale, bias, mean, var}; }
};

BnInputs bnInputs(const Shape& shape, uint64_t seed) {
  const int64_t c = shape[1];
  return {randomTensor(shape, seed, -2.0f, 3.0f), randomTensor({c}, seed + 1, 0.5f, 1.5f),
          randomTensor({c}, seed + 2), randomTensor({c}, seed + 3),
          randomTensor({c}, seed + 4, 0.5f, 2.0f)};
}

BuildFn batchNorm(Attributes a, int numOutputs, int opset) {
  return [a, numOutputs, opset](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "BatchNormalization", in, a, numOutputs, ir::kOnnxDomain, opset);
  };
}

Attributes training(float momentum = 0.9f) {
  return attrs({{"training_mode", int64_t{1}}, {"momentum", momentum}});
}

TEST(BatchNorm, TrainingOpset15MatchesReference) {
  auto in = bnInputs({2, 3, 2, 2}, 30);
  auto out = runForward(batchNorm(training(0.8f), 3, 15), in.all());
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.8f);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[1], ref.runMean, 1e-5, 1e-6));
  // Population variance (ONNX opset 15), not the unbiased one.
  EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
}

TEST(BatchNorm, TrainingInferredFromOutputsAtOpset12WithSavedStatistics) {
  auto in = bnInputs({3, 2, 4}, 40);
  auto out = runForward(batchNorm(attrs({{"epsilon", 1e-3f}}), 5, 12), in.all());
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-3f, 0.9f);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[1], ref.runMean, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[3], ref.mean, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[4], ref.var, 1e-5, 1e-6));
}

TEST(BatchNorm, RankTwoAndSizeOneSpatial) {
  auto in = bnInputs({5, 3}, 50);
  auto out = runForward(batchNorm(training(), 3, 14), in.all());
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.9f);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
  auto in1 = bnInputs({2, 2, 1, 1, 3}, 55);
  auto out1 = runForward(batchNorm(training(), 1, 15), in1.all());
  EXPECT_TRUE(allClose(
      out1[0], refBatchNorm(in1.x, in1.scale, in1.bias, in1.mean, in1.var, true, 1e-5f, 0.9f).y,
      1e-5, 1e-5));
}

TEST(BatchNorm, InferenceUsesInputStatistics) {
  auto in = bnInputs({2, 3, 2, 2}, 60);
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, 1e-5f, 0.9f);
  auto out15 = runForward(batchNorm({}, 1, 15), in.all());  // training_mode defaults to 0
  EXPECT_TRUE(allClose(out15[0], ref.y, 1e-5, 1e-5));
  auto out11 = runForward(batchNorm({}, 1, 11), in.all());  // one output: inference
  EXPECT_TRUE(allClose(out11[0], ref.y, 1e-5, 1e-5));
}

TEST(BatchNorm, TrainingGradientsMatchFiniteDifferences) {
  auto in = bnInputs({2, 3, 2, 2}, 70);
  GradCheckOptions o;
  o.wrt = {0, 1, 2};
  expectGradientsMatch(batchNorm(training(), 1, 15), in.all(), o);
  // The running statistics are outputs too: their gradients reach X through the batch statistics.
  expectGradientsMatch(batchNorm(training(0.7f), 3, 15), in.all(), o);
  auto in2 = bnInputs({4, 2}, 75);
  expectGradientsMatch(batchNorm({}, 5, 12), in2.all(), o);
}

// Large enough (>= 32768 elements) for the kernels to split the channels over threads; X far from
// zero checks the shifted one-pass statistics.
TEST(BatchNorm, ChannelsSplitOverThreadsMatchReference) {
  auto in = bnInputs({4, 8, 32, 32}, 90);
  for (float& v : in.x.span<float>()) v += 50.0f;
  auto out = runForward(batchNorm(training(0.8f), 3, 15), in.all());
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.8f);
  EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-4));
  EXPECT_TRUE(allClose(out[1], ref.runMean, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
  auto inf = runForward(batchNorm({}, 1, 15), in.all());
  EXPECT_TRUE(allClose(inf[0],
                       refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, 1e-5f, 0.9f).y,
                       1e-5, 1e-4));
  GradCheckOptions o;
  o.wrt = {1, 2};
  expectGradientsMatch(batchNorm(training(), 1, 15), in.all(), o);
}

Attributes unbiasedTraining(float momentum = 0.9f) {
  Attributes a = training(momentum);
  a.set("running_variance", std::string("unbiased"));
  return a;
}

// PyTorch's convention (running_variance = "unbiased"): running_var takes the batch variance
// times M / (M - 1) (M = N*S values per channel), the rest is ONNX's: Y and running_mean as
// before, saved_var (opset < 14) the population variance.
TEST(BatchNorm, UnbiasedRunningVarianceMatchesPyTorchFormula) {
  for (const Shape& shape :
       {Shape{2, 3, 2, 2}, Shape{5, 3}, Shape{2, 2, 1, 1, 3}, Shape{1, 2, 2}}) {
    SCOPED_TRACE(::testing::Message() << "X " << shapeToString(shape));
    auto in = bnInputs(shape, 110);
    auto out = runForward(batchNorm(unbiasedTraining(0.8f), 3, 15), in.all());
    auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.8f, true);
    auto onnx = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.8f);
    EXPECT_TRUE(allClose(out[0], ref.y, 1e-5, 1e-5));
    EXPECT_TRUE(allClose(out[1], ref.runMean, 1e-5, 1e-6));
    EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
    // The two conventions differ by M / (M - 1) in the batch's share: not by rounding.
    EXPECT_FALSE(allClose(out[2], onnx.runVar, 1e-3, 1e-4));
  }
  auto in = bnInputs({3, 2, 4}, 120);
  Attributes a = attrs({{"epsilon", 1e-3f}, {"running_variance", std::string("unbiased")}});
  auto out = runForward(batchNorm(a, 5, 12), in.all());
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-3f, 0.9f, true);
  EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[4], ref.var, 1e-5, 1e-6));  // saved_var: the population variance
}

// Large enough for the channels to be split over threads; X far from zero (shifted statistics).
TEST(BatchNorm, UnbiasedRunningVarianceOverThreadsMatchesReference) {
  auto in = bnInputs({4, 8, 32, 32}, 130);
  for (float& v : in.x.span<float>()) v += 50.0f;
  auto out = runForward(batchNorm(unbiasedTraining(0.8f), 3, 15), in.all());
  auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.8f, true);
  EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
}

// Inference mode has no running statistics to update: the convention changes nothing.
TEST(BatchNorm, UnbiasedRunningVarianceLeavesInferenceAlone) {
  auto in = bnInputs({1, 3}, 140);
  Attributes a;
  a.set("running_variance", std::string("unbiased"));
  auto out = runForward(batchNorm(a, 1, 15), in.all());
  EXPECT_TRUE(allClose(out[0],
                       refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, 1e-5f, 0.9f).y,
                       1e-5, 1e-5));
}

// One value per channel: the unbiased variance is 0/0. PyTorch refuses to train such a batch
// ("Expected more than 1 value per channel when training"); so does xtrain, naming the op and X.
// ONNX's population variance is 0 there, and stays allowed.
TEST(BatchNorm, UnbiasedRunningVarianceRefusesOneValuePerChannel) {
  for (const Shape& shape : {Shape{1, 3}, Shape{1, 2, 1, 1}}) {
    auto in = bnInputs(shape, 150);
    expectError([&] { runForward(batchNorm(unbiasedTraining(), 3, 15), in.all()); },
                {"BatchNormalization", "one value per channel", shapeToString(shape),
                 "Expected more than 1 value per channel"});
    auto out = runForward(batchNorm(training(0.8f), 3, 15), in.all());
    auto ref = refBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, true, 1e-5f, 0.8f);
    EXPECT_TRUE(allClose(out[2], ref.runVar, 1e-5, 1e-6));
  }
}

TEST(BatchNorm, UnknownRunningVarianceNamesTheValue) {
  auto in = bnInputs({2, 3}, 160);
  Attributes a = training();
  a.set("running_variance", std::string("bessel"));
  expectError([&] { runForward(batchNorm(a, 3, 15), in.all()); },
              {"BatchNormalization", "running_variance", "bessel", "population", "unbiased"});
}

// The convention changes what running_var holds, not how Y is computed: the gradients of X, scale
// and B are the same; a gradient arriving at running_var reaches X through M / (M - 1) times the
// batch variance (finite differences of the unbiased forward check the factor).
TEST(BatchNorm, UnbiasedRunningVarianceGradientsMatchFiniteDifferences) {
  auto in = bnInputs({2, 3, 2, 2}, 170);
  GradCheckOptions o;
  o.wrt = {0, 1, 2};
  expectGradientsMatch(batchNorm(unbiasedTraining(), 1, 15), in.all(), o);
  expectGradientsMatch(batchNorm(unbiasedTraining(0.7f), 3, 15), in.all(), o);
  auto in2 = bnInputs({3, 2}, 175);
  expectGradientsMatch(batchNorm(unbiasedTraining(0.5f), 3, 14), in2.all(), o);
}

TEST(BatchNorm, InferenceGradientsMatchFiniteDifferences) {
  auto in = bnInputs({2, 3, 3}, 80);
  GradCheckOptions o;
  o.wrt = {0, 1, 2};
  expectGradientsMatch(batchNorm({}, 1, 15), in.all(), o);
}

TEST(BatchNorm, WrongScaleShapeNamesTheOp) {
  auto in = bnInputs({2, 3, 2}, 90);
  in.scale = randomTensor({4}, 91);
  expectError([&] { runForward(batchNorm(training(), 1, 15), in.all()); },
              {"BatchNormalization", "scale", "FLOAT[4]", "FLOAT[3]"});
  auto in2 = bnInputs({2, 3}, 92);
  in2.var = randomTensor({3, 1}, 93);
  expectError([&] { runForward(batchNorm(training(), 1, 15), in2.all()); },
              {"BatchNormalization", "input_var"});
}

TEST(BatchNorm, InvalidOutputsAndRankNameTheOp) {
  auto in = bnInputs({2, 3}, 100);
  expectError([&] { runForward(batchNorm({}, 3, 15), in.all()); },
              {"BatchNormalization", "training_mode is 0"});
  expectError([&] { runForward(batchNorm(training(), 5, 15), in.all()); },
              {"BatchNormalization", "opset 15", "saved_mean"});
  auto x1 = randomTensor({3}, 101);
  expectError(
      [&] {
        runForward(batchNorm(training(), 1, 15), {x1, in.scale, in.bias, in.mean, in.var});
      },
      {"BatchNormalization", "rank >= 2"});
}

}  // namespace
}  // namespace xtrain::testing
