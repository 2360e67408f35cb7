#include <gtest/gtest.h>

#include <thread>

#include "ir/autodiff/autodiff.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Naive convolution over [N, C, spatial...] with 1 to 3 spatial dims, explicit pads [begin...,
// end...].
HostTensor refConv(const HostTensor& X, const HostTensor& W, const HostTensor* B,
                   const Shape& strides, const Shape& pads, const Shape& dilations, int64_t group) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const size_t nd = xs.size() - 2;
  // Pad everything to 3 spatial dims (leading unit dims).
  Shape in(3, 1), k(3, 1), s(3, 1), d(3, 1), pb(3, 0), out(3, 1);
  for (size_t i = 0; i < nd; ++i) {
    const size_t j = 3 - nd + i;
    in[j] = xs[2 + i];
    k[j] = ws[2 + i];
    s[j] = strides[i];
    d[j] = dilations[i];
    pb[j] = pads[i];
    out[j] = (in[j] + pads[i] + pads[i + nd] - ((k[j] - 1) * d[j] + 1)) / s[j] + 1;
  }
  const int64_t n = xs[0], c = xs[1], m = ws[0], cg = c / group, mg = m / group;
  Shape ys{n, m};
  for (size_t i = 0; i < nd; ++i) {
    ys.push_back(out[3 - nd + i]);
  }
  HostTensor Y(TensorInfo(DataType::FLOAT, ys));
  const float* px = X.data<float>();
  const float* pw = W.data<float>();
  float* py = Y.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t g = oc / mg;
      for (int64_t o0 = 0; o0 < out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < out[1]; ++o1) {
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = B ? B->data<float>()[oc] : 0.0;
            for (int64_t ic = 0; ic < cg; ++ic) {
              for (int64_t k0 = 0; k0 < k[0]; ++k0) {
                for (int64_t k1 = 0; k1 < k[1]; ++k1) {
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) {
                      continue;
                    }
                    const int64_t xi =
                        (((b * c + g * cg + ic) * in[0] + i0) * in[1] + i1) * in[2] + i2;
                    const int64_t wi = (((oc * cg + ic) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    acc += static_cast<double>(px[xi]) * pw[wi];
                  }
                }
              }
            }
            py[(((b * m + oc) * out[0] + o0) * out[1] + o1) * out[2] + o2] =
                static_cast<float>(acc);
          }
        }
      }
    }
  }
  return Y;
}

struct ConvCase {
  ConvCase(Shape x_, Shape w_, Shape strides_ = {}, Shape pads_ = {}, Shape dilations_ = {},
           int64_t group_ = 1, bool bias_ = false, std::string autoPad_ = {})
      : x(std::move(x_)),
        w(std::move(w_)),
        strides(std::move(strides_)),
        pads(std::move(pads_)),
        dilations(std::move(dilations_)),
        group(group_),
        bias(bias_),
        autoPad(std::move(autoPad_)) {}
  Shape x, w;
  Shape strides, pads, dilations;  // empty: attribute not set (defaults)
  int64_t group;
  bool bias;
  std::string autoPad;  // empty: not set
};

// The pads the reference uses: explicit, or what ONNX's auto_pad rule gives.
Shape expectedPads(const ConvCase& c) {
  const size_t nd = c.x.size() - 2;
  if (c.autoPad.empty() || c.autoPad == "NOTSET") {
    return c.pads.empty() ? Shape(2 * nd, 0) : c.pads;
  }
  Shape pads(2 * nd, 0);
  if (c.autoPad == "VALID") {
    return pads;
  }
  for (size_t i = 0; i < nd; ++i) {
    const int64_t s = c.strides.empty() ? 1 : c.strides[i];
    const int64_t d = c.dilations.empty() ? 1 : c.dilations[i];
    const int64_t in = c.x[2 + i];
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + (c.w[2 + i] - 1) * d + 1 - in);
    pads[c.autoPad == "SAME_UPPER" ? i : i + nd] = total / 2;
    pads[c.autoPad == "SAME_UPPER" ? i + nd : i] = total - total / 2;
  }
  return pads;
}

Attributes convAttrs(const ConvCase& c) {
  Attributes a;
  if (!c.strides.empty()) {
    a.set("strides", c.strides);
  }
  if (!c.pads.empty()) {
    a.set("pads", c.pads);
  }
  if (!c.dilations.empty()) {
    a.set("dilations", c.dilations);
  }
  if (c.group != 1) {
    a.set("group", c.group);
  }
  if (!c.autoPad.empty()) {
    a.set("auto_pad", c.autoPad);
  }
  return a;
}

std::vector<HostTensor> convInputs(const ConvCase& c, uint64_t seed) {
  std::vector<HostTensor> in{randomTensor(c.x, seed), randomTensor(c.w, seed + 1)};
  if (c.bias) {
    in.push_back(randomTensor({c.w[0]}, seed + 2));
  }
  return in;
}

class ConvForward : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvForward, MatchesNaiveConvolution) {
  const ConvCase& c = GetParam();
  auto in = convInputs(c, 1);
  const Attributes attrs = convAttrs(c);
  auto out = runForward([&](ir::Graph& g, auto ids) { return addOp(g, "Conv", ids, attrs); }, in);
  const size_t nd = c.x.size() - 2;
  const Shape strides = c.strides.empty() ? Shape(nd, 1) : c.strides;
  const Shape dilations = c.dilations.empty() ? Shape(nd, 1) : c.dilations;
  EXPECT_TRUE(allClose(out[0],
                       refConv(in[0], in[1], c.bias ? &in[2] : nullptr, strides, expectedPads(c),
                               dilations, c.group),
                       1e-4, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvForward,
    ::testing::Values(
        ConvCase{{1, 1, 5, 5}, {1, 1, 3, 3}},
        ConvCase{{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 1, true},
        ConvCase{{1, 4, 6, 6}, {6, 2, 3, 3}, {}, {1, 1, 1, 1}, {}, 2, true},
        ConvCase{{2, 3, 5, 5}, {3, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 3, false},  // depthwise
        ConvCase{{1, 2, 9, 8}, {3, 2, 2, 3}, {2, 3}, {0, 1, 1, 0}, {2, 2}, 1, true},
        ConvCase{{2, 8, 4, 4}, {5, 8, 1, 1}},
        ConvCase{{1, 6, 8, 7}, {4, 3, 3, 3}, {2, 2}, {0, 0, 1, 1}, {3, 1}, 2, true},
        ConvCase{{1, 2, 7, 7}, {3, 2, 4, 4}, {2, 2}, {}, {}, 1, false, "SAME_UPPER"},
        ConvCase{{1, 2, 7, 7}, {3, 2, 4, 4}, {2, 2}, {}, {}, 1, false, "SAME_LOWER"},
        ConvCase{{1, 2, 6, 5}, {3, 2, 2, 2}, {1, 1}, {}, {2, 2}, 1, true, "SAME_UPPER"},
        ConvCase{{1, 2, 7, 7}, {3, 2, 3, 3}, {2, 2}, {5, 5, 5, 5}, {}, 1, false, "VALID"},
        ConvCase{{2, 3, 10}, {4, 3, 3}, {2}, {1, 2}, {}, 1, true},                        // 1-D
        ConvCase{{1, 2, 4, 5, 5}, {3, 2, 2, 3, 3}, {}, {1, 1, 1, 1, 1, 1}, {}, 1, true},  // 3-D
        ConvCase{{0, 2, 5, 5}, {3, 2, 3, 3}},  // empty batch
        // Channel counts that are multiples of 16: the 16-channel blocked activations on AVX-512.
        ConvCase{{2, 16, 6, 6}, {32, 16, 3, 3}, {}, {1, 1, 1, 1}, {}, 1, true},
        ConvCase{{1, 32, 7, 7}, {16, 32, 3, 3}, {2, 2}, {1, 1, 1, 1}},
        ConvCase{{2, 16, 5, 5}, {16, 16, 1, 1}, {2, 2}},
        ConvCase{{2, 16, 9}, {16, 16, 3}, {}, {1, 1}, {}, 1, true},
        ConvCase{{1, 16, 3, 4, 4}, {16, 16, 1, 3, 3}, {}, {0, 1, 1, 0, 1, 1}}));

class ConvGrad : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvGrad, MatchesFiniteDifferences) {
  const ConvCase& c = GetParam();
  const Attributes attrs = convAttrs(c);
  expectGradientsMatch([&](ir::Graph& g, auto ids) { return addOp(g, "Conv", ids, attrs); },
                       convInputs(c, 5));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvGrad,
    ::testing::Values(ConvCase{{1, 2, 5, 5}, {3, 2, 3, 3}, {}, {1, 1, 1, 1}, {}, 1, true},
                      ConvCase{{2, 4, 6, 5}, {2, 2, 2, 2}, {2, 1}, {1, 0, 0, 1}, {2, 1}, 2, true},
                      ConvCase{{1, 3, 5, 5}, {3, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 3, false},
                      ConvCase{{2, 2, 7}, {3, 2, 3}, {2}, {1, 1}, {2}, 1, true},
                      ConvCase{{1, 2, 5, 4}, {2, 2, 2, 3}, {2, 2}, {}, {}, 1, true, "SAME_LOWER"},
                      ConvCase{{1, 16, 4, 4}, {16, 16, 3, 3}, {}, {1, 1, 1, 1}, {}, 1, true}));

TEST(ConvGrad, OnlyBiasNeedsAGradient) {
  ConvCase c{{1, 2, 4, 4}, {3, 2, 3, 3}, {}, {1, 1, 1, 1}, {}, 1, true};
  GradCheckOptions opts;
  opts.wrt = {2};
  expectGradientsMatch([&](ir::Graph& g, auto ids) { return addOp(g, "Conv", ids, convAttrs(c)); },
                       convInputs(c, 9), opts);
}

void expectConvError(const ConvCase& c, const std::vector<std::string>& parts) {
  try {
    runForward([&](ir::Graph& g, auto ids) { return addOp(g, "Conv", ids, convAttrs(c)); },
               convInputs(c, 1));
    FAIL() << "expected an error";
  } catch (const error& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST(ConvErrors, ChannelMismatch) {
  expectConvError({{1, 3, 5, 5}, {2, 2, 3, 3}},
                  {"Conv", "channel mismatch", "[1,3,5,5]", "[2,2,3,3]"});
}

TEST(ConvErrors, GroupMustDivideChannels) {
  expectConvError({{1, 4, 5, 5}, {3, 2, 3, 3}, {}, {}, {}, 2}, {"Conv", "group 2", "[3,2,3,3]"});
  expectConvError({{1, 3, 5, 5}, {4, 1, 3, 3}, {}, {}, {}, 2}, {"Conv", "group 2", "[1,3,5,5]"});
}

TEST(ConvErrors, BadBiasRankAndKernel) {
  ConvCase c{{1, 2, 5, 5}, {3, 2, 3, 3}};
  try {
    auto in = convInputs(c, 1);
    in.push_back(randomTensor({2}, 3));
    runForward([&](ir::Graph& g, auto ids) { return addOp(g, "Conv", ids); }, in);
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("bias B [2]"), std::string::npos) << e.what();
  }
  expectConvError({{1, 2, 5, 5}, {3, 2, 3}}, {"Conv", "rank", "[3,2,3]"});
  expectConvError({{1, 2, 2, 2}, {3, 2, 3, 3}}, {"Conv", "larger than the padded input"});
  expectConvError({{1, 2, 5, 5}, {3, 2, 3, 3}, {}, {}, {}, 1, false, "SAME"},
                  {"Conv", "auto_pad 'SAME'"});
}

// Replicas run one program concurrently on their own buffers: the oneDNN kernels (conv, pooling,
// matmul, forward and backward) must give every thread the single-threaded result.
TEST(ConvConcurrency, ReplicaThreadsShareKernels) {
  ir::Graph g;
  const std::vector<HostTensor> values{randomTensor({4, 20, 16, 16}, 1),
                                       randomTensor({32, 20, 3, 3}, 2), randomTensor({8, 5}, 3)};
  const std::vector<TensorId> ids{"v0", "v1", "v2"};
  for (size_t i = 0; i < values.size(); ++i) {
    g.addTensor(ids[i], values[i].info(), ir::TensorKind::Variable,
                std::make_shared<HostTensor>(values[i]));
  }
  Attributes conv;
  conv.set("pads", Shape{1, 1, 1, 1});
  const TensorId y = addOp(g, "Conv", {"v0", "v1"}, conv)[0];
  Attributes pool;
  pool.set("kernel_shape", Shape{2, 2});
  pool.set("strides", Shape{2, 2});
  const TensorId z = addOp(g, "MaxPool", {y}, pool)[0];
  const TensorId m = addOp(g, "MatMul", {z, "v2"})[0];
  Attributes scalar;
  scalar.set("shape", Shape{});
  const TensorId loss = addOp(g, "ReduceSumToShape", {m}, scalar, 1, ir::kXtrainDomain)[0];
  const auto grads = ir::autodiff(g, loss, {"v0", "v1", "v2"});
  session::LoweredGraph lowered(g);
  auto step = [&](std::vector<HostTensor>& buffers) {
    lowered.run(ir::Phase::Forward, buffers, 1);
    lowered.run(ir::Phase::Backward, buffers, 1);
  };
  auto reference = lowered.makeBuffers();
  step(reference);
  std::vector<std::vector<HostTensor>> replicas(4);
  std::vector<std::thread> threads;
  threads.reserve(replicas.size());
  for (auto& buffers : replicas) {
    threads.emplace_back([&] {
      buffers = lowered.makeBuffers();
      for (int i = 0; i < 20; ++i) {
        step(buffers);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& [input, grad] : grads) {
    const size_t index = static_cast<size_t>(lowered.bufferIndex(grad));
    for (const auto& buffers : replicas) {
      EXPECT_TRUE(allClose(buffers[index], reference[index], 1e-5, 1e-6))
          << "gradient of " << input;
    }
  }
}

}  // namespace
}  // namespace xtrain::testing
