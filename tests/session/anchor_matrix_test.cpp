// Anchors of every return type (ALL, EVERYN, FINAL, SUM) through whole sessions, for every mix of
// batches per step, gradient accumulation and replication; fed through StepIO and through
// PopART's StepIOCallback; and SyntheticDataMode, seen by the model. The model's anchors are
// identities of its input, so every expected buffer is derived from the data fed (in the layout
// [bps, af, L] of docs/replication-semantics.md section 6), not from xtrain.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "session/step_buffers.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

// x (an input of shape `shape`) -> all, every, final, sum (Identity each); training adds a weight
// and a loss.
struct IdentityModel {
  std::string proto;
  TensorId x, all, every, final, sum, loss;
};

IdentityModel buildModel(bool training, const Shape& shape) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  IdentityModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, shape), "x");
  m.all = onnx.identity({m.x}, "all");
  m.every = onnx.identity({m.x}, "every");
  m.final = onnx.identity({m.x}, "final");
  m.sum = onnx.identity({m.x}, "sum");
  for (const auto& id : {m.all, m.every, m.final, m.sum}) b->addOutputTensor(id);
  if (training) {
    auto w = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({}, {1.0f}), "w");
    m.loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({m.x, w})}, ReductionType::Mean);
    b->addOutputTensor(m.loss);
  }
  m.proto = b->getModelProto();
  return m;
}

struct Layout {
  int bps = 1;
  int64_t af = 1, L = 1;
  int everyN = 1;
  bool training = false;
  SyntheticDataMode synthetic = SyntheticDataMode::Off;
};

std::unique_ptr<Session> makeSession(const IdentityModel& m, const Layout& l) {
  const DataFlow df(l.bps, {{m.all, AnchorReturnType("ALL")},
                            {m.every, AnchorReturnType("EVERYN", l.everyN)},
                            {m.final, AnchorReturnType("FINAL")},
                            {m.sum, AnchorReturnType("SUM")}});
  SessionOptions opts;
  opts.syntheticDataMode = l.synthetic;
  if (l.L > 1) {
    opts.enableReplicatedGraphs = true;
    opts.replicatedGraphCount = l.L;
  }
  if (l.af > 1) {
    opts.enableGradientAccumulation = true;
    opts.accumulationFactor = l.af;
  }
  auto device =
      DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", std::to_string(l.L)}});
  std::unique_ptr<Session> s;
  if (l.training) {
    s = TrainingSession::createFromOnnxModel(m.proto, df, m.loss, ConstSGD(0.01f), device, {},
                                             opts);
  } else {
    s = InferenceSession::createFromOnnxModel(m.proto, df, device, {}, opts);
  }
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// The values each anchor must return when micro-batch (b, a) of replica r was fed
// input[(b * af + a) * L + r] (one float per micro-batch), in buffer order.
std::map<std::string, std::vector<float>> expectedFromInput(const std::vector<float>& input,
                                                            const Layout& l) {
  std::map<std::string, std::vector<float>> e;
  auto at = [&](int64_t b, int64_t a, int64_t r) {
    return input[static_cast<size_t>((b * l.af + a) * l.L + r)];
  };
  e["all"] = input;
  // EVERYN(N): global batches N, 2N, ... with all af accumulation steps of each (PopART's
  // AnchorReturnTypeId::EveryN).
  for (int64_t b = l.everyN - 1; b < l.bps; b += l.everyN) {
    for (int64_t a = 0; a < l.af; ++a) {
      for (int64_t r = 0; r < l.L; ++r) e["every"].push_back(at(b, a, r));
    }
  }
  for (int64_t r = 0; r < l.L; ++r) {
    e["final"].push_back(at(l.bps - 1, l.af - 1, r));
    float s = 0;
    for (int64_t b = 0; b < l.bps; ++b) {
      for (int64_t a = 0; a < l.af; ++a) s += at(b, a, r);
    }
    e["sum"].push_back(s);
  }
  return e;
}

// The documented buffer shape: the prefix with its dimensions of 1 left out.
Shape prefixShape(std::vector<int64_t> dims) {
  Shape s;
  for (int64_t d : dims) {
    if (d != 1) s.push_back(d);
  }
  return s;
}

// Distinct values, so that any element in the wrong place shows.
std::vector<float> distinctInput(const Layout& l) {
  std::vector<float> v(static_cast<size_t>(l.bps * l.af * l.L));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1) * 1.5f;
  return v;
}

class AnchorMatrix : public ::testing::TestWithParam<std::tuple<int, int, int, bool>> {
 protected:
  Layout layout() const {
    Layout l;
    std::tie(l.bps, l.af, l.L, l.training) = GetParam();
    l.everyN = l.bps % 2 == 0 ? 2 : 1;
    return l;
  }
};

TEST_P(AnchorMatrix, StepIOBuffersHoldWhatTheDataFlowAsks) {
  const Layout l = layout();
  const IdentityModel m = buildModel(l.training, {});
  auto s = makeSession(m, l);
  std::vector<float> input = distinctInput(l);
  NDArrayWrapper<float> in(input.data(), s->expectedInputBufferShape(m.x));
  EXPECT_EQ(in.shape(), prefixShape({l.bps, l.af, l.L}));
  auto anchors = s->initAnchorArrays();
  std::map<TensorId, IArray&> outs;
  for (auto& [id, a] : anchors) outs.emplace(id, *a);
  StepIO io({{m.x, in}}, outs);
  s->run(io);

  const auto expected = expectedFromInput(input, l);
  const std::map<std::string, Shape> shapes{{"all", prefixShape({l.bps, l.af, l.L})},
                                            {"every", prefixShape({l.bps / l.everyN, l.af, l.L})},
                                            {"final", prefixShape({l.L})},
                                            {"sum", prefixShape({l.L})}};
  for (const auto& [name, id] : std::map<std::string, TensorId>{
           {"all", m.all}, {"every", m.every}, {"final", m.final}, {"sum", m.sum}}) {
    auto& a = *anchors.at(id);
    const float* p = a.dataAs<float>();
    EXPECT_EQ(std::vector<float>(p, p + a.nelms()), expected.at(name)) << name;
    EXPECT_EQ(a.shape(), shapes.at(name)) << name;
  }
}

// PopART's StepIOCallback: one in() per micro-batch and replica, in order, each followed by its
// inComplete(); one out() per value returned, each followed by its outComplete(). The values the
// callbacks receive are the StepIO buffers' values, in the same order.
TEST_P(AnchorMatrix, StepIOCallbackSeesTheSameValuesInOrder) {
  const Layout l = layout();
  const IdentityModel m = buildModel(l.training, {2});
  auto s = makeSession(m, l);
  // Input element e of micro-batch k is 10 k + e; an anchor value is its first element.
  const int64_t micro = l.bps * l.af * l.L;
  std::vector<std::vector<float>> inputs;
  for (int64_t k = 0; k < micro; ++k) {
    inputs.push_back({10.0f * static_cast<float>(k), 10.0f * static_cast<float>(k) + 1});
  }
  size_t nextInput = 0;
  bool inputOpen = false;
  std::map<TensorId, std::vector<float>> received;
  std::map<TensorId, std::vector<float>> scratch;
  TensorId outputOpen;
  StepIOCallback io(
      [&](TensorId id, bool prefetch) {
        EXPECT_EQ(id, m.x);
        EXPECT_FALSE(inputOpen) << "in() before the previous inComplete()";
        EXPECT_FALSE(prefetch);
        inputOpen = true;
        if (nextInput >= inputs.size()) {
          ADD_FAILURE() << "more in() calls than micro-batches";
          nextInput = 0;
        }
        return ConstVoidData(inputs[nextInput++].data(), TensorInfo(DataType::FLOAT, {2}));
      },
      [&](TensorId id) {
        EXPECT_EQ(id, m.x);
        EXPECT_TRUE(inputOpen) << "inComplete() without in()";
        inputOpen = false;
      },
      [&](TensorId id) {
        EXPECT_EQ(outputOpen, "") << "out() before the previous outComplete()";
        outputOpen = id;
        scratch[id].assign(2, std::nanf(""));
        return MutableVoidData(scratch[id].data(), TensorInfo(DataType::FLOAT, {2}));
      },
      [&](TensorId id) {
        EXPECT_EQ(outputOpen, id);
        outputOpen.clear();
        // Element 1 is element 0 + 1 in every input, so in a sum it is + the values summed.
        const float summed = id == m.sum ? static_cast<float>(l.bps * l.af) : 1.0f;
        EXPECT_EQ(scratch[id][1], scratch[id][0] + summed) << id;
        received[id].push_back(scratch[id][0]);
      });
  s->run(io);
  EXPECT_EQ(nextInput, inputs.size());
  EXPECT_FALSE(inputOpen);

  std::vector<float> firsts;
  for (const auto& v : inputs) firsts.push_back(v[0]);
  const auto expected = expectedFromInput(firsts, l);
  EXPECT_EQ(received[m.all], expected.at("all"));
  EXPECT_EQ(received[m.every], expected.at("every"));
  EXPECT_EQ(received[m.final], expected.at("final"));
  EXPECT_EQ(received[m.sum], expected.at("sum"));
}

// Every (bps, af, L) of bps 1, 2, 4, af 1, 2 and L 1, 2 in a training session, and those without
// accumulation (which needs training) in an inference session too.
std::vector<std::tuple<int, int, int, bool>> layouts() {
  std::vector<std::tuple<int, int, int, bool>> v;
  for (int bps : {1, 2, 4}) {
    for (int af : {1, 2}) {
      for (int L : {1, 2}) {
        v.emplace_back(bps, af, L, true);
        if (af == 1) v.emplace_back(bps, af, L, false);
      }
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(BpsAfReplicas, AnchorMatrix, ::testing::ValuesIn(layouts()),
                         [](const auto& info) {
                           return "bps" + std::to_string(std::get<0>(info.param)) + "_af" +
                                  std::to_string(std::get<1>(info.param)) + "_L" +
                                  std::to_string(std::get<2>(info.param)) +
                                  (std::get<3>(info.param) ? "_training" : "_inference");
                         });

// The case: bps 2, af 2, 2 replicas, EVERYN(2). Inputs 1..8 are micro-batches
// [[1,2],[3,4]] of global batch 1 and [[5,6],[7,8]] of global batch 2; the second global batch
// with both its accumulation steps is [5,6,7,8] (not every second micro-batch, [3,4,7,8]).
TEST(AnchorMatrixCase, EveryNCountsGlobalBatches) {
  Layout l;
  l.bps = 2;
  l.af = 2;
  l.L = 2;
  l.everyN = 2;
  l.training = true;
  const IdentityModel m = buildModel(true, {});
  auto s = makeSession(m, l);
  std::vector<float> input{1, 2, 3, 4, 5, 6, 7, 8};
  NDArrayWrapper<float> in(input.data(), Shape{2, 2, 2});
  auto anchors = s->initAnchorArrays();
  std::map<TensorId, IArray&> outs;
  for (auto& [id, a] : anchors) outs.emplace(id, *a);
  StepIO io({{m.x, in}}, outs);
  s->run(io);
  const float* p = anchors.at(m.every)->dataAs<float>();
  EXPECT_EQ(std::vector<float>(p, p + 4), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(anchors.at(m.every)->shape(), (Shape{2, 2}));
}

// An IStepIO written as for PopART: it overrides in, inComplete and out only (PopART's
// outComplete does nothing by default) and is called through the interface with PopART's default
// isBroadcast.
class PopartStyleStepIO : public IStepIO {
 public:
  explicit PopartStyleStepIO(std::vector<float> input) : input_(std::move(input)) {}
  ConstVoidData in(TensorId, int64_t numElements, bool, bool) override {
    EXPECT_EQ(numElements, 1);
    return ConstVoidData(&input_.at(next_++), TensorInfo(DataType::FLOAT, {}));
  }
  void inComplete(TensorId, int64_t, bool) override {}
  MutableVoidData out(TensorId id, int64_t) override {
    auto& v = outs[id];
    v.push_back(std::nanf(""));
    return MutableVoidData(&v.back(), TensorInfo(DataType::FLOAT, {}));
  }
  std::map<TensorId, std::vector<float>> outs;

 private:
  std::vector<float> input_;
  size_t next_ = 0;
};

TEST(AnchorMatrixCase, APopartStyleStepIOFeedsTheSession) {
  PopartStyleStepIO direct({1.0f});
  IStepIO& io = direct;
  EXPECT_EQ(*static_cast<const float*>(io.in("x", 1, false).data), 1.0f);  // isBroadcast = false
  io.inComplete("x", 1);
  io.outComplete("x");  // PopART's default: nothing to do

  Layout l;
  l.bps = 2;
  l.L = 2;
  const IdentityModel m = buildModel(false, {});
  auto s = makeSession(m, l);
  PopartStyleStepIO fed({1, 2, 3, 4});
  // Each out() appends to a vector that may move: reserve so the pointers stay valid.
  for (const auto& id : {m.all, m.every, m.final, m.sum}) fed.outs[id].reserve(8);
  s->run(fed);
  EXPECT_EQ(fed.outs[m.all], (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(fed.outs[m.final], (std::vector<float>{3, 4}));
  EXPECT_EQ(fed.outs[m.sum], (std::vector<float>{4, 6}));
}

// SyntheticDataMode: the model sees zeros, or random values of the documented distribution
// (RandomUniform in [-1, 1], RandomNormal N(0, 1)), whatever the StepIO holds; it needs no input
// buffer at all.
struct Moments {
  double mean = 0, sd = 0, min = 0, max = 0;
};

Moments momentsOf(const std::vector<float>& v) {
  Moments s;
  s.min = s.max = v.front();
  for (float f : v) {
    s.mean += f;
    s.min = std::min<double>(s.min, f);
    s.max = std::max<double>(s.max, f);
  }
  s.mean /= static_cast<double>(v.size());
  for (float f : v) s.sd += (f - s.mean) * (f - s.mean);
  s.sd = std::sqrt(s.sd / static_cast<double>(v.size()));
  return s;
}

// One step of a training session over a [100, 100] input with synthetic data; returns what the
// ALL anchor saw on each micro-batch and replica. `withInput` also gives an input buffer of 7s,
// which synthetic data must ignore.
std::vector<std::vector<float>> seenWithSyntheticData(SyntheticDataMode mode, bool withInput) {
  Layout l;
  l.bps = 2;
  l.L = 2;
  l.training = true;
  l.synthetic = mode;
  const IdentityModel m = buildModel(true, {100, 100});
  auto s = makeSession(m, l);
  auto anchors = s->initAnchorArrays();
  std::map<TensorId, IArray&> outs;
  for (auto& [id, a] : anchors) outs.emplace(id, *a);
  std::vector<float> sevens(static_cast<size_t>(2 * 2 * 100 * 100), 7.0f);
  NDArrayWrapper<float> in(sevens.data(), Shape{2, 2, 100, 100});
  std::map<TensorId, IArray&> ins;
  if (withInput) ins.emplace(m.x, in);
  StepIO io(ins, outs);
  s->run(io);
  auto& all = *anchors.at(m.all);
  std::vector<std::vector<float>> seen;
  for (int64_t k = 0; k < 4; ++k) {
    const float* p = all.dataAs<float>() + k * 10000;
    seen.emplace_back(p, p + 10000);
  }
  return seen;
}

TEST(SyntheticData, ZerosReachTheModel) {
  for (bool withInput : {false, true}) {
    for (const auto& v : seenWithSyntheticData(SyntheticDataMode::Zeros, withInput)) {
      EXPECT_EQ(v, std::vector<float>(10000, 0.0f)) << "withInput " << withInput;
    }
  }
}

TEST(SyntheticData, RandomUniformReachesTheModel) {
  // 10,000 samples of U(-1, 1): the mean's standard error is 0.006, the sd's about 0.003.
  for (const auto& v : seenWithSyntheticData(SyntheticDataMode::RandomUniform, true)) {
    const Moments s = momentsOf(v);
    EXPECT_NEAR(s.mean, 0.0, 0.04);
    EXPECT_NEAR(s.sd, std::sqrt(1.0 / 3.0), 0.03);
    EXPECT_GE(s.min, -1.0);
    EXPECT_LE(s.max, 1.0);
    EXPECT_LT(s.min, -0.99);  // the whole interval, not a part of it
    EXPECT_GT(s.max, 0.99);
  }
}

TEST(SyntheticData, RandomNormalReachesTheModel) {
  // 10,000 samples of N(0, 1): the mean's standard error is 0.01, the sd's about 0.007.
  for (const auto& v : seenWithSyntheticData(SyntheticDataMode::RandomNormal, false)) {
    const Moments s = momentsOf(v);
    EXPECT_NEAR(s.mean, 0.0, 0.06);
    EXPECT_NEAR(s.sd, 1.0, 0.05);
    EXPECT_LT(s.min, -2.5);  // a normal tail, not a uniform [-1, 1]
    EXPECT_GT(s.max, 2.5);
  }
}

// Integer inputs: RandomUniform spans the element type's whole range (BOOL: 0 or 1, about half
// each); RandomNormal gives N(0, 1) truncated toward zero.
TEST(SyntheticData, IntegerTypesSpanTheirRange) {
  struct Case {
    DataType type;
    double low, high;
  };
  for (const Case& c :
       {Case{DataType::INT8, -128, 127}, Case{DataType::UINT8, 0, 255}, Case{DataType::BOOL, 0, 1},
        Case{DataType::INT32, -2147483648.0, 2147483647.0}}) {
    SCOPED_TRACE(dataTypeName(c.type));
    HostTensor t(TensorInfo(c.type, {4000}));
    session::fillSynthetic(t, SyntheticDataMode::RandomUniform, 3);
    std::vector<float> v(4000);
    for (int64_t i = 0; i < 4000; ++i)
      v[static_cast<size_t>(i)] = static_cast<float>(t.getAsDouble(i));
    const Moments s = momentsOf(v);
    const double range = c.high - c.low;
    // U(low, high) over 4,000 draws: the mean's standard error is 0.0046 of the range.
    EXPECT_NEAR(s.mean, (c.low + c.high) / 2, 0.03 * range);
    // A discrete uniform over n values has sd sqrt((n^2 - 1) / 12).
    EXPECT_NEAR(s.sd, std::sqrt(((range + 1) * (range + 1) - 1) / 12.0), 0.03 * range);
    EXPECT_GE(s.min, c.low);
    EXPECT_LE(s.max, c.high);
  }
  HostTensor n(TensorInfo(DataType::INT32, {4000}));
  session::fillSynthetic(n, SyntheticDataMode::RandomNormal, 3);
  int64_t zeros = 0;
  for (int64_t i = 0; i < 4000; ++i) zeros += n.getAsDouble(i) == 0.0 ? 1 : 0;
  // P(|N(0, 1)| < 1) = 0.683.
  EXPECT_NEAR(static_cast<double>(zeros) / 4000.0, 0.683, 0.04);
}

}  // namespace
}  // namespace xtrain::testing
