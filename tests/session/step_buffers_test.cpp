// StepBuffers driven directly, as SessionImpl::run drives it (per micro-batch: every replica's
// inputs in replica order, then every replica's anchors; finish() at the end of the step), over a
// graph built by hand: the buffer layouts of docs/replication-semantics.md section 6 for
// bps x af x replicas in {1,2,3}^3 through whole-step StepIO buffers and through IStepIO
// callbacks, every AnchorReturnType, broadcast inputs, buffer checks and synthetic data.
#include "session/step_buffers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "testing/error_testing.hpp"

namespace xtrain::session {
namespace {

using xtrain::testing::expectError;

// The buffer shape section 6 gives: prefix + the tensor's shape, prefix dimensions equal to 1 left
// out (written here again, not with withPrefix, so that the test does not lean on the code under
// test).
Shape docShape(const std::vector<int64_t>& prefix, const Shape& own) {
  Shape s;
  for (auto d : prefix) {
    if (d != 1) s.push_back(d);
  }
  s.insert(s.end(), own.begin(), own.end());
  return s;
}

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// Distinct values for every (iteration, replica, element): what the host feeds and what the
// replicas produce.
float inputValue(int64_t it, int64_t r, int64_t e) {
  return static_cast<float>(1000 * it + 10 * r + e);
}
float broadcastValue(int64_t it, int64_t e) {
  return static_cast<float>(-1000 * it - e - 1);
}
float anchorValue(int64_t it, int64_t r, int64_t e) {
  return 0.5f + static_cast<float>(1000 * it + 10 * r + e);
}

const Shape kX{2};         // replicated input
const Shape kC{1, 3};      // broadcast input (its own dimension of size 1 stays)
const Shape kA{2};         // anchors
const Shape kFinal{1, 2};  // the FINAL anchor

// Inputs x (replicated), w (a weight, not host-fed) and c (broadcast); anchors all (ALL), final
// (FINAL), sum (SUM), e1 (EVERYN(1)) and en (EVERYN(n)). The anchors are activations whose
// producers do not matter here: StepBuffers only moves their values.
void buildGraph(ir::Graph& g) {
  g.addTensor("x", TensorInfo(DataType::FLOAT, kX), ir::TensorKind::Stream);
  g.addTensor("w", TensorInfo(DataType::FLOAT, kX), ir::TensorKind::Variable);
  g.addTensor("c", TensorInfo(DataType::FLOAT, kC), ir::TensorKind::Stream);
  g.inputs() = {"x", "w", "c"};
  for (const char* id : {"all", "sum", "e1", "en"}) {
    g.addTensor(id, TensorInfo(DataType::FLOAT, kA), ir::TensorKind::Activation);
  }
  g.addTensor("final", TensorInfo(DataType::FLOAT, kFinal), ir::TensorKind::Activation);
}

DataFlow dataFlow(int bps, int n) {
  return DataFlow(bps, {{"all", AnchorReturnTypes::All()},
                        {"final", AnchorReturnTypes::Final()},
                        {"sum", AnchorReturnTypes::Sum()},
                        {"e1", AnchorReturnTypes::EveryN(1)},
                        {"en", AnchorReturnTypes::EveryN(n)}});
}

HostTensor filled(const TensorInfo& info, float v) {
  HostTensor t(info);
  for (int64_t i = 0; i < t.nelms(); ++i) t.setFromDouble(i, v);
  return t;
}

// One step as SessionImpl::run drives it, up to finish() (the caller's). checkInput(k, it, r, value
// read) sees each input read.
void driveStep(StepBuffers& io, const ir::Graph& g, int64_t bps, int64_t af, int64_t L,
               const std::function<void(size_t, int64_t, int64_t, const HostTensor&)>& checkInput) {
  for (int64_t b = 0; b < bps; ++b) {
    for (int64_t a = 0; a < af; ++a) {
      const int64_t it = b * af + a;
      for (int64_t r = 0; r < L; ++r) {
        for (size_t k = 0; k < io.inputIds().size(); ++k) {
          HostTensor dst = filled(g.tensor(io.inputIds()[k]).info, -7.0f);
          io.readInput(k, it, r, dst);
          checkInput(k, it, r, dst);
        }
      }
      for (int64_t r = 0; r < L; ++r) {
        for (size_t k = 0; k < io.anchorIds().size(); ++k) {
          HostTensor src(g.tensor(io.anchorIds()[k]).info);
          for (int64_t e = 0; e < src.nelms(); ++e) src.setFromDouble(e, anchorValue(it, r, e));
          io.writeAnchor(k, it, r, src);
        }
      }
    }
  }
}

// Checks an input read against section 6: x gets its (iteration, replica) micro-batch, c the
// iteration's micro-batch whatever the replica.
void expectInputRead(const std::vector<TensorId>& ids, size_t k, int64_t it, int64_t r,
                     const HostTensor& v) {
  const std::string where =
      ids[k] + " iteration " + std::to_string(it) + " replica " + std::to_string(r);
  if (ids[k] == "x") {
    ASSERT_EQ(v.shape(), kX);
    for (int64_t e = 0; e < 2; ++e) EXPECT_EQ(v.data<float>()[e], inputValue(it, r, e)) << where;
  } else {
    ASSERT_EQ(ids[k], "c");
    ASSERT_EQ(v.shape(), kC);
    for (int64_t e = 0; e < 3; ++e) EXPECT_EQ(v.data<float>()[e], broadcastValue(it, e)) << where;
  }
}

// The values section 6 says each anchor returns, in buffer order (for callbacks: in call order).
std::vector<float> expectedAll(int64_t its, int64_t L) {
  std::vector<float> v;
  for (int64_t it = 0; it < its; ++it) {
    for (int64_t r = 0; r < L; ++r) {
      for (int64_t e = 0; e < 2; ++e) v.push_back(anchorValue(it, r, e));
    }
  }
  return v;
}
// EVERYN(n): batches n, 2n, ... of the step, each with all its af micro-batches.
std::vector<float> expectedEveryN(int64_t bps, int64_t af, int64_t L, int64_t n) {
  std::vector<float> v;
  for (int64_t b = n - 1; b < bps; b += n) {
    for (int64_t a = 0; a < af; ++a) {
      for (int64_t r = 0; r < L; ++r) {
        for (int64_t e = 0; e < 2; ++e) v.push_back(anchorValue(b * af + a, r, e));
      }
    }
  }
  return v;
}
std::vector<float> expectedFinal(int64_t its, int64_t L) {
  std::vector<float> v;
  for (int64_t r = 0; r < L; ++r) {
    for (int64_t e = 0; e < 2; ++e) v.push_back(anchorValue(its - 1, r, e));
  }
  return v;
}
std::vector<float> expectedSum(int64_t its, int64_t L) {
  std::vector<float> v;
  for (int64_t r = 0; r < L; ++r) {
    for (int64_t e = 0; e < 2; ++e) {
      float s = 0;
      for (int64_t it = 0; it < its; ++it) s += anchorValue(it, r, e);
      v.push_back(s);
    }
  }
  return v;
}

// An IStepIO that serves x and c as section 6 orders them (x: micro-batches to the replicas in
// turn; c: one per micro-batch, flagged broadcast), checks each in/out is completed before the
// next, and records every anchor value in call order.
class RecordingStepIO : public IStepIO {
 public:
  explicit RecordingStepIO(int64_t L) : L_(L) {}

  ConstVoidData in(TensorId id, int64_t numElements, bool prefetch, bool isBroadcast) override {
    EXPECT_FALSE(prefetch);
    EXPECT_FALSE(inOpen_[id]) << "in('" << id << "') before inComplete";
    inOpen_[id] = true;
    const int64_t c = inCalls_[id]++;
    std::vector<float> v;
    if (id == "x") {
      EXPECT_FALSE(isBroadcast);
      EXPECT_EQ(numElements, 2);
      for (int64_t e = 0; e < 2; ++e) v.push_back(inputValue(c / L_, c % L_, e));
      return ConstVoidData::fromVector<float>(kX, v);
    }
    EXPECT_EQ(id, "c");
    EXPECT_TRUE(isBroadcast);
    EXPECT_EQ(numElements, 3);
    for (int64_t e = 0; e < 3; ++e) v.push_back(broadcastValue(c, e));
    return ConstVoidData::fromVector<float>(kC, v);
  }
  void inComplete(TensorId id, int64_t numElements, bool isBroadcast) override {
    EXPECT_TRUE(inOpen_[id]) << "inComplete('" << id << "') without in";
    EXPECT_EQ(isBroadcast, id == "c");
    EXPECT_EQ(numElements, id == "c" ? 3 : 2);
    inOpen_[id] = false;
  }
  MutableVoidData out(TensorId id, int64_t numElements) override {
    EXPECT_EQ(outOpen_, "") << "out('" << id << "') before outComplete('" << outOpen_ << "')";
    EXPECT_EQ(numElements, 2);
    outOpen_ = id;
    auto& values = outs[id];
    const size_t at = values.size();
    values.resize(at + 2, std::numeric_limits<float>::quiet_NaN());
    pending_ = &values;
    pendingAt_ = at;
    scratch_.assign(2, std::numeric_limits<float>::quiet_NaN());
    return MutableVoidData(scratch_.data(),
                           TensorInfo(DataType::FLOAT, id == "final" ? kFinal : kA));
  }
  void outComplete(TensorId id) override {
    EXPECT_EQ(outOpen_, id);
    outOpen_.clear();
    for (size_t e = 0; e < 2; ++e) (*pending_)[pendingAt_ + e] = scratch_[e];
  }

  int64_t inCalls(const TensorId& id) { return inCalls_[id]; }
  std::map<TensorId, std::vector<float>> outs;  // anchor values in call order

 private:
  int64_t L_;
  std::map<TensorId, int64_t> inCalls_;
  std::map<TensorId, bool> inOpen_;
  TensorId outOpen_;
  std::vector<float>* pending_ = nullptr;
  size_t pendingAt_ = 0;
  std::vector<float> scratch_;
};

class StepBuffersLayout : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(StepBuffersLayout, WholeStepBuffers) {
  const auto [bps, af, L] = GetParam();
  const int64_t its = int64_t{bps} * af;
  const int n = bps;  // EVERYN(n) keeps only the last batch
  ir::Graph g;
  buildGraph(g);
  const DataFlow df = dataFlow(bps, n);

  std::vector<float> x, c;
  for (int64_t it = 0; it < its; ++it) {
    for (int64_t r = 0; r < L; ++r) {
      for (int64_t e = 0; e < 2; ++e) x.push_back(inputValue(it, r, e));
    }
    for (int64_t e = 0; e < 3; ++e) c.push_back(broadcastValue(it, e));
  }
  NDArrayWrapper<float> xa(x.data(), docShape({bps, af, L}, kX));
  NDArrayWrapper<float> ca(c.data(), docShape({bps, af}, kC));
  const std::map<TensorId, Shape> outShapes{{"all", docShape({bps, af, L}, kA)},
                                            {"e1", docShape({bps, af, L}, kA)},
                                            {"en", docShape({bps / n, af, L}, kA)},
                                            {"final", docShape({L}, kFinal)},
                                            {"sum", docShape({L}, kA)}};
  std::map<TensorId, std::vector<float>> outs;
  std::map<TensorId, std::unique_ptr<NDArrayWrapper<float>>> arrays;
  std::map<TensorId, IArray&> outArrays;
  for (const auto& [id, shape] : outShapes) {
    outs[id].assign(static_cast<size_t>(elements(shape)), 99.0f);  // SUM must start from 0
    arrays[id] = std::make_unique<NDArrayWrapper<float>>(outs[id].data(), shape);
    outArrays.emplace(id, *arrays[id]);
  }
  StepIO stepio({{"x", xa}, {"c", ca}}, outArrays);

  StepBuffers io(g, df, SyntheticDataMode::Off, bps, af, L, stepio, 1, {"c"});
  EXPECT_EQ(io.inputIds(), (std::vector<TensorId>{"x", "c"}));  // streams only, in graph order
  EXPECT_EQ(io.anchorIds(), df.anchors());
  driveStep(io, g, bps, af, L, [&](size_t k, int64_t it, int64_t r, const HostTensor& v) {
    expectInputRead(io.inputIds(), k, it, r, v);
  });
  io.finish();

  EXPECT_EQ(outs["all"], expectedAll(its, L));
  EXPECT_EQ(outs["e1"], expectedAll(its, L));
  EXPECT_EQ(outs["en"], expectedEveryN(bps, af, L, n));
  EXPECT_EQ(outs["final"], expectedFinal(its, L));
  EXPECT_EQ(outs["sum"], expectedSum(its, L));
}

TEST_P(StepBuffersLayout, Callbacks) {
  const auto [bps, af, L] = GetParam();
  const int64_t its = int64_t{bps} * af;
  const int n = bps;
  ir::Graph g;
  buildGraph(g);
  const DataFlow df = dataFlow(bps, n);
  RecordingStepIO stepio(L);

  StepBuffers io(g, df, SyntheticDataMode::Off, bps, af, L, stepio, 1, {"c"});
  driveStep(io, g, bps, af, L, [&](size_t k, int64_t it, int64_t r, const HostTensor& v) {
    expectInputRead(io.inputIds(), k, it, r, v);
  });
  // SUM is only complete at the end of the step: nothing of it before finish().
  EXPECT_EQ(stepio.outs.count("sum"), 0u);
  io.finish();

  EXPECT_EQ(stepio.inCalls("x"), its * L);
  EXPECT_EQ(stepio.inCalls("c"), its);  // one callback per micro-batch for every replica
  EXPECT_EQ(stepio.inCalls("w"), 0);
  EXPECT_EQ(stepio.outs["all"], expectedAll(its, L));
  EXPECT_EQ(stepio.outs["e1"], expectedAll(its, L));
  EXPECT_EQ(stepio.outs["en"], expectedEveryN(bps, af, L, n));
  EXPECT_EQ(stepio.outs["final"], expectedFinal(its, L));
  EXPECT_EQ(stepio.outs["sum"], expectedSum(its, L));
}

INSTANTIATE_TEST_SUITE_P(BpsAfReplicas, StepBuffersLayout,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(1, 2, 3),
                                            ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return "bps" + std::to_string(std::get<0>(info.param)) + "_af" +
                                  std::to_string(std::get<1>(info.param)) + "_L" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST(StepBuffers, EveryNKeepsWholeBatches) {
  // The third vector of section 6: training, af = 2, bps = 2, L = 2, inputs
  // [[[1,2],[3,4]],[[5,6],[7,8]]] through an identity: EVERYN(2) gives [[5,6],[7,8]] (both
  // micro-batches of batch 2), FINAL [7,8], SUM [16,20]. And bps = 4, af = 2, L = 1, EVERYN(2):
  // batches 2 and 4, both micro-batches each.
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Stream);
  g.inputs() = {"x"};
  for (const char* id : {"every", "final", "sum"}) {
    g.addTensor(id, TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Activation);
  }
  auto run = [&](int bps, int af, int L, std::vector<float> input) {
    const DataFlow df(bps, {{"every", AnchorReturnTypes::EveryN(2)},
                            {"final", AnchorReturnTypes::Final()},
                            {"sum", AnchorReturnTypes::Sum()}});
    std::vector<float> every(input.size() / 2), final(static_cast<size_t>(L)),
        sum(static_cast<size_t>(L));
    NDArrayWrapper<float> in(input.data(), docShape({bps, af, L}, {}));
    NDArrayWrapper<float> everyA(every.data(), docShape({bps / 2, af, L}, {}));
    NDArrayWrapper<float> finalA(final.data(), docShape({L}, {}));
    NDArrayWrapper<float> sumA(sum.data(), docShape({L}, {}));
    StepIO stepio({{"x", in}}, {{"every", everyA}, {"final", finalA}, {"sum", sumA}});
    StepBuffers io(g, df, SyntheticDataMode::Off, bps, af, L, stepio, 1);
    for (int64_t it = 0; it < int64_t{bps} * af; ++it) {
      std::vector<HostTensor> x(static_cast<size_t>(L),
                                HostTensor(TensorInfo(DataType::FLOAT, {})));
      for (int64_t r = 0; r < L; ++r) io.readInput(0, it, r, x[static_cast<size_t>(r)]);
      for (int64_t r = 0; r < L; ++r) {
        for (size_t k = 0; k < 3; ++k) io.writeAnchor(k, it, r, x[static_cast<size_t>(r)]);
      }
    }
    io.finish();
    return std::map<std::string, std::vector<float>>{
        {"every", every}, {"final", final}, {"sum", sum}};
  };
  auto out = run(2, 2, 2, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(out["every"], (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(out["final"], (std::vector<float>{7, 8}));
  EXPECT_EQ(out["sum"], (std::vector<float>{16, 20}));
  out = run(4, 2, 1, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(out["every"], (std::vector<float>{3, 4, 7, 8}));
  EXPECT_EQ(out["final"], (std::vector<float>{8}));
  EXPECT_EQ(out["sum"], (std::vector<float>{36}));
}

TEST(StepBuffers, SumOfAnIntegerAnchor) {
  ir::Graph g;
  g.addTensor("n", TensorInfo(DataType::INT32, {2}), ir::TensorKind::Activation);
  const DataFlow df(3, {{"n", AnchorReturnTypes::Sum()}});
  std::vector<int32_t> sum(4, 123);
  NDArrayWrapper<int32_t> sumA(sum.data(), Shape{2, 2});
  StepIO stepio({}, {{"n", sumA}});
  StepBuffers io(g, df, SyntheticDataMode::Off, 3, 1, 2, stepio, 1);
  for (int32_t it = 0; it < 3; ++it) {
    for (int32_t r = 0; r < 2; ++r) {
      io.writeAnchor(0, it, r, HostTensor::fromVector<int32_t>({2}, {it + 10 * r, -it}));
    }
  }
  io.finish();
  EXPECT_EQ(sum, (std::vector<int32_t>{3, -3, 33, -3}));
}

// ---------------------------------------------------------------------------------------------
// Buffer checks: every buffer is checked when StepBuffers is made, before anything runs.

// The layout of the buffer-check cases: bps = 2, af = 1, L = 2 (EVERYN's period 2).
struct Buffers {
  int bps = 2, af = 1, L = 2;
  std::vector<float> x, c, all, final, sum, e1, en;  // sized by makeStepBuffers
};

// Makes StepBuffers over the Buffers' vectors with the given shapes (section 6's by default); a
// shape in `replace` overrides one buffer's, an entry in `drop` leaves a buffer out.
void makeStepBuffers(const std::map<TensorId, Shape>& replace, const std::set<TensorId>& drop = {},
                     IArray* extra = nullptr) {
  ir::Graph g;
  buildGraph(g);
  Buffers b;
  const DataFlow df = dataFlow(b.bps, 2);
  std::map<TensorId, std::pair<std::vector<float>*, Shape>> all{
      {"x", {&b.x, docShape({b.bps, b.af, b.L}, kX)}},
      {"c", {&b.c, docShape({b.bps, b.af}, kC)}},
      {"all", {&b.all, docShape({b.bps, b.af, b.L}, kA)}},
      {"e1", {&b.e1, docShape({b.bps, b.af, b.L}, kA)}},
      {"en", {&b.en, docShape({b.bps / 2, b.af, b.L}, kA)}},
      {"final", {&b.final, docShape({b.L}, kFinal)}},
      {"sum", {&b.sum, docShape({b.L}, kA)}}};
  std::vector<std::unique_ptr<NDArrayWrapper<float>>> arrays;
  std::map<TensorId, IArray&> ins, outs;
  for (auto& [id, buffer] : all) {
    if (drop.count(id)) continue;
    auto it = replace.find(id);
    const Shape shape = it == replace.end() ? buffer.second : it->second;
    buffer.first->resize(static_cast<size_t>(elements(shape)));
    arrays.push_back(std::make_unique<NDArrayWrapper<float>>(buffer.first->data(), shape));
    (id == "x" || id == "c" ? ins : outs).emplace(id, *arrays.back());
  }
  if (extra != nullptr) ins.emplace("nosuch", *extra);
  StepIO stepio(ins, outs);
  StepBuffers io(g, df, SyntheticDataMode::Off, b.bps, b.af, b.L, stepio, 1, {"c"});
}

TEST(StepBuffers, AcceptsTheDocumentedShapesAndAnyShapeOfTheSameElementCount) {
  EXPECT_NO_THROW(makeStepBuffers({}));
  // Section 6 checks element counts: a flat buffer of the right size is accepted.
  EXPECT_NO_THROW(makeStepBuffers({{"x", {8}}, {"all", {8}}, {"final", {4}}}));
}

TEST(StepBuffers, WrongInputShapeNamesTheTensorAndBothShapes) {
  expectError(
      [] {
        makeStepBuffers({{"x", {3, 2}}});
      },
      {"input 'x'", "[3,2] (6 elements)", "expected shape [2,2,2] (8 elements)",
       "[batchesPerStep, accumulationFactor, replicas]"});
  // A broadcast input has no replica dimension: a buffer with one is refused.
  expectError(
      [] {
        makeStepBuffers({{"c", {2, 2, 1, 3}}});
      },
      {"input 'c'", "[2,2,1,3]", "expected shape [2,1,3]", "broadcast"});
}

TEST(StepBuffers, WrongAnchorShapeNamesTheTensorAndBothShapes) {
  expectError(
      [] {
        makeStepBuffers({{"all", {2, 3}}});
      },
      {"anchor 'all'", "[2,3]", "expected shape [2,2,2]",
       "[batchesPerStep, accumulationFactor, replicas]"});
  expectError(
      [] {
        makeStepBuffers({{"en", {2, 2, 2}}});
      },
      {"anchor 'en'", "[2,2,2]", "expected shape [2,2]",
       "[batchesPerStep / N, accumulationFactor, replicas]"});
  // The tensor's own dimension of size 1 stays in the expected shape.
  expectError(
      [] {
        makeStepBuffers({{"final", {2}}});
      },
      {"anchor 'final'", "[2] (2 elements)", "expected shape [2,1,2]", "[replicas]"});
  expectError(
      [] {
        makeStepBuffers({{"sum", {2, 2, 2}}});
      },
      {"anchor 'sum'", "[2,2,2]", "expected shape [2,2]", "[replicas]"});
}

TEST(StepBuffers, WrongElementTypeNamesTheTensorAndBothTypes) {
  ir::Graph g;
  buildGraph(g);
  std::vector<int32_t> xi(8);
  std::vector<float> c(6), all(8), e1(8), en(4), final(4), sum(4);
  NDArrayWrapper<int32_t> xa(xi.data(), Shape{2, 2, 2});
  NDArrayWrapper<float> ca(c.data(), Shape{2, 1, 3});
  NDArrayWrapper<float> alla(all.data(), Shape{2, 2, 2}), e1a(e1.data(), Shape{2, 2, 2}),
      ena(en.data(), Shape{2, 2}), fa(final.data(), Shape{2, 1, 2}), sa(sum.data(), Shape{2, 2});
  StepIO stepio({{"x", xa}, {"c", ca}},
                {{"all", alla}, {"e1", e1a}, {"en", ena}, {"final", fa}, {"sum", sa}});
  expectError(
      [&] { StepBuffers io(g, dataFlow(2, 2), SyntheticDataMode::Off, 2, 1, 2, stepio, 1, {"c"}); },
      {"input 'x'", "INT32", "FLOAT"});

  std::vector<float> x(8);
  std::vector<double> sumd(4);
  NDArrayWrapper<float> xf(x.data(), Shape{2, 2, 2});
  NDArrayWrapper<double> sd(sumd.data(), Shape{2, 2});
  StepIO stepio2({{"x", xf}, {"c", ca}},
                 {{"all", alla}, {"e1", e1a}, {"en", ena}, {"final", fa}, {"sum", sd}});
  expectError(
      [&] {
        StepBuffers io(g, dataFlow(2, 2), SyntheticDataMode::Off, 2, 1, 2, stepio2, 1, {"c"});
      },
      {"anchor 'sum'", "DOUBLE", "FLOAT"});
}

TEST(StepBuffers, MissingAndUnknownBuffersAreNamed) {
  expectError([] { makeStepBuffers({}, {"x"}); }, {"no buffer for input 'x'", "FLOAT", "[2,2,2]"});
  expectError([] { makeStepBuffers({}, {"final"}); },
              {"no buffer for anchor 'final'", "FLOAT", "[2,1,2]"});
  std::vector<float> v(8);
  NDArrayWrapper<float> extra(v.data(), Shape{8});
  expectError([&] { makeStepBuffers({}, {}, &extra); }, {"'nosuch'", "not an input"});
}

// An IStepIO whose answers the test sets: data of a given info, or none.
class FixedStepIO : public IStepIO {
 public:
  ConstVoidData in(TensorId, int64_t, bool, bool) override { return input; }
  void inComplete(TensorId, int64_t, bool) override {}
  MutableVoidData out(TensorId, int64_t) override { return output; }
  void outComplete(TensorId) override {}

  ConstVoidData input;
  MutableVoidData output;
};

TEST(StepBuffers, CallbackDataOfTheWrongShapeOrTypeIsRefused) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 2}), ir::TensorKind::Stream);
  g.inputs() = {"x"};
  g.addTensor("y", TensorInfo(DataType::FLOAT, {3}), ir::TensorKind::Activation);
  const DataFlow df(1, {{"y", AnchorReturnTypes::All()}});
  FixedStepIO stepio;
  StepBuffers io(g, df, SyntheticDataMode::Off, 1, 1, 1, stepio, 1);
  HostTensor x(TensorInfo(DataType::FLOAT, {2, 2}));
  const HostTensor y(TensorInfo(DataType::FLOAT, {3}));

  stepio.input = ConstVoidData::fromVector<float>({3}, {1, 2, 3});
  expectError([&] { io.readInput(0, 0, 0, x); },
              {"IStepIO::in", "'x'", "FLOAT[3] (3 elements)", "expected FLOAT[2,2] (4 elements)"});
  stepio.input = ConstVoidData::fromVector<int32_t>({2, 2}, {1, 2, 3, 4});
  expectError([&] { io.readInput(0, 0, 0, x); },
              {"IStepIO::in", "'x'", "INT32[2,2]", "FLOAT[2,2]"});
  stepio.input = ConstVoidData();
  expectError([&] { io.readInput(0, 0, 0, x); }, {"no data for input 'x'"});
  // The same count in another shape is accepted; so is data without an info.
  stepio.input = ConstVoidData::fromVector<float>({4}, {1, 2, 3, 4});
  EXPECT_NO_THROW(io.readInput(0, 0, 0, x));
  EXPECT_EQ(x.toVector<float>(), (std::vector<float>{1, 2, 3, 4}));

  std::vector<float> out(4);
  stepio.output = MutableVoidData(out.data(), TensorInfo(DataType::FLOAT, {4}));
  expectError([&] { io.writeAnchor(0, 0, 0, y); },
              {"IStepIO::out", "'y'", "FLOAT[4] (4 elements)", "expected FLOAT[3] (3 elements)"});
  stepio.output = MutableVoidData();
  expectError([&] { io.writeAnchor(0, 0, 0, y); }, {"no buffer for anchor 'y'"});
}

TEST(StepBuffers, CheckHostBufferAndWithPrefix) {
  const TensorInfo expected(DataType::FLOAT, {2, 3});
  EXPECT_NO_THROW(checkHostBuffer("what", "t", expected, TensorInfo(DataType::FLOAT, {6})));
  expectError(
      [&] { checkHostBuffer("what", "t", expected, TensorInfo(DataType::FLOAT, {5})); },
      {"what: buffer for 't'", "FLOAT[5] (5 elements)", "expected FLOAT[2,3] (6 elements)"});
  expectError(
      [&] {
        checkHostBuffer("what", "t", expected, TensorInfo(DataType::INT32, {2, 3}));
      },
      {"'t'", "INT32[2,3]", "FLOAT[2,3]"});
  EXPECT_EQ(withPrefix({1, 2, 1}, {1, 3}), (Shape{2, 1, 3}));
  EXPECT_EQ(withPrefix({1, 1, 1}, {}), (Shape{}));
  EXPECT_EQ(withPrefix({4, 2, 3}, {1}), (Shape{4, 2, 3, 1}));
}

// ---------------------------------------------------------------------------------------------
// Synthetic data: inputs filled without host data (no buffers, no callbacks), every replica.

// A graph with a large FLOAT input (statistics) and an INT32 one.
void buildSyntheticGraph(ir::Graph& g) {
  g.addTensor("x", TensorInfo(DataType::FLOAT, {100, 100}), ir::TensorKind::Stream);
  g.addTensor("n", TensorInfo(DataType::INT32, {5}), ir::TensorKind::Stream);
  g.inputs() = {"x", "n"};
}

// Reads every input of every replica once (into buffers filled with `sentinel`) through an IStepIO
// that must not be asked for inputs; returns [replica][input].
std::vector<std::vector<HostTensor>> readSynthetic(SyntheticDataMode mode, int64_t L,
                                                   uint64_t seed) {
  ir::Graph g;
  buildSyntheticGraph(g);
  FixedStepIO callbacks;  // returns no data: any in() call fails the read
  StepBuffers io(g, DataFlow(2), mode, 2, 1, L, callbacks, seed);
  std::vector<std::vector<HostTensor>> out(static_cast<size_t>(L));
  for (int64_t r = 0; r < L; ++r) {
    for (size_t k = 0; k < io.inputIds().size(); ++k) {
      out[static_cast<size_t>(r)].push_back(filled(g.tensor(io.inputIds()[k]).info, 7.0f));
      io.readInput(k, 0, r, out[static_cast<size_t>(r)].back());
    }
  }
  // Later micro-batches reuse what the replica's buffer holds.
  for (int64_t r = 0; r < L; ++r) {
    for (size_t k = 0; k < io.inputIds().size(); ++k) {
      HostTensor again = out[static_cast<size_t>(r)][k];
      io.readInput(k, 1, r, again);
      EXPECT_EQ(std::memcmp(again.raw(), out[static_cast<size_t>(r)][k].raw(), again.nbytes()), 0);
    }
  }
  return out;
}

struct Stats {
  double mean = 0, sd = 0, min = 0, max = 0;
};
Stats statsOf(const HostTensor& t) {
  Stats s;
  const auto v = t.toVector<float>();
  s.min = s.max = v.front();
  for (float f : v) {
    EXPECT_TRUE(std::isfinite(f));
    s.mean += f;
    s.min = std::min<double>(s.min, f);
    s.max = std::max<double>(s.max, f);
  }
  s.mean /= static_cast<double>(v.size());
  for (float f : v) s.sd += (f - s.mean) * (f - s.mean);
  s.sd = std::sqrt(s.sd / static_cast<double>(v.size()));
  return s;
}

TEST(StepBuffers, SyntheticZerosFillsEveryReplica) {
  const auto out = readSynthetic(SyntheticDataMode::Zeros, 3, 1);
  for (size_t r = 0; r < out.size(); ++r) {
    for (const auto& t : out[r]) {
      for (int64_t i = 0; i < t.nelms(); ++i) {
        ASSERT_EQ(t.getAsDouble(i), 0.0) << "replica " << r << " element " << i;
      }
    }
  }
}

TEST(StepBuffers, SyntheticRandomNormalFillsEveryReplica) {
  // 10,000 samples: the mean's standard error is 0.01 and the standard deviation's about 0.007,
  // so these bounds hold with a wide margin.
  const auto out = readSynthetic(SyntheticDataMode::RandomNormal, 3, 1);
  for (size_t r = 0; r < out.size(); ++r) {
    SCOPED_TRACE("replica " + std::to_string(r));
    const Stats s = statsOf(out[r][0]);
    EXPECT_NEAR(s.mean, 0.0, 0.06);
    EXPECT_NEAR(s.sd, 1.0, 0.05);
    EXPECT_LT(s.min, -2.5);  // a normal tail, not a uniform [-1, 1]
    EXPECT_GT(s.max, 2.5);
    // Integer inputs get N(0, 1) truncated toward zero: small integers.
    for (int32_t v : out[r][1].toVector<int32_t>()) EXPECT_LE(std::abs(v), 6);
  }
  // Another seed, other values.
  const auto other = readSynthetic(SyntheticDataMode::RandomNormal, 1, 2);
  EXPECT_NE(other[0][0].toVector<float>(), out[0][0].toVector<float>());
}

TEST(StepBuffers, SyntheticRandomUniformFillsEveryReplica) {
  const auto out = readSynthetic(SyntheticDataMode::RandomUniform, 2, 1);
  for (size_t r = 0; r < out.size(); ++r) {
    SCOPED_TRACE("replica " + std::to_string(r));
    const Stats s = statsOf(out[r][0]);
    EXPECT_NEAR(s.mean, 0.0, 0.05);
    EXPECT_NEAR(s.sd, std::sqrt(1.0 / 3.0), 0.03);
    EXPECT_GE(s.min, -1.0);
    EXPECT_LE(s.max, 1.0);
    // Integer inputs span their type's range (tests/session/anchor_matrix_test.cpp checks the
    // distribution): five draws over INT32 are not all zero.
    EXPECT_NE(out[r][1].toVector<int32_t>(), std::vector<int32_t>(5, 0));
  }
}

TEST(StepBuffers, SyntheticDataNeedsNoInputBuffers) {
  // A StepIO without input buffers is fine with synthetic data; its anchors are still checked.
  ir::Graph g;
  buildSyntheticGraph(g);
  g.addTensor("y", TensorInfo(DataType::FLOAT, {3}), ir::TensorKind::Activation);
  const DataFlow df(2, {{"y", AnchorReturnTypes::Final()}});
  std::vector<float> y(6);
  NDArrayWrapper<float> ya(y.data(), Shape{2, 3});
  StepIO stepio({}, {{"y", ya}});
  EXPECT_NO_THROW(StepBuffers(g, df, SyntheticDataMode::Zeros, 2, 1, 2, stepio, 1));
  NDArrayWrapper<float> wrong(y.data(), Shape{5});
  StepIO wrongIO({}, {{"y", wrong}});
  expectError([&] { StepBuffers io(g, df, SyntheticDataMode::Zeros, 2, 1, 2, wrongIO, 1); },
              {"anchor 'y'", "[5]", "[2,3]"});
}

}  // namespace
}  // namespace xtrain::session
