// Grouped weights (docs/replication-semantics.md section 4, acceptance cases 6 and 7 of section 9):
// weights whose VariableSettings give each group of replicas its own value, reduced over their own
// group only, with optimizer state following the weight, both retrieval modes, save and reload, and
// the errors for bad settings. GroupedSession.* runs GroupedWorker.* under xrun for the layouts of
// several instances.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

struct Model {
  std::string proto;
  TensorId x, loss;
};

// loss = sum(x * w) (+ sum(x * v) when `v` is given) over [3] weights; group g of w starts at g +
// 1, group g of v at 10 (g + 1). The gradient of every weight is the replica's x.
Model sumModel(const VariableSettings& w, int64_t wGroups, std::optional<VariableSettings> v = {},
               int64_t vGroups = 1, std::optional<int> embeddedReplicas = {}) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  if (embeddedReplicas) b->embedReplicationFactor(*embeddedReplicas);
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {3}), "x");
  auto initial = [](int64_t groups, float scale) {
    std::vector<float> values;
    for (int64_t g = 0; g < groups; ++g)
      values.insert(values.end(), 3, scale * static_cast<float>(g + 1));
    return ConstVoidData::fromVector<float>(groups > 1 ? Shape{groups, 3} : Shape{3}, values);
  };
  auto y = onnx.mul({m.x, b->addInitializedInputTensor(initial(wGroups, 1.0f), w, "w")});
  if (v)
    y = onnx.add(
        {y, onnx.mul({m.x, b->addInitializedInputTensor(initial(vGroups, 10.0f), *v, "v")})});
  m.loss = b->aiGraphcoreOpset1().identityloss({y}, ReductionType::Sum);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

SessionOptions replicated(int64_t replicas, ReductionType reduction = ReductionType::Sum,
                          MeanReductionStrategy strategy = MeanReductionStrategy::Post) {
  SessionOptions o;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = replicas;
  o.accumulationAndReplicationReductionType = reduction;
  o.meanAccumulationAndReplicationReductionStrategy = strategy;
  return o;
}

std::unique_ptr<TrainingSession> makeSession(const std::string& proto, const TensorId& loss,
                                             const SessionOptions& o, const Optimizer& opt) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(o.getLocalReplicationFactor())}});
  auto s = TrainingSession::createFromOnnxModel(proto, DataFlow(1), loss, opt, device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

// One step; replica r (of this session) gets x = (r + 1) * [1, 2, 3].
void step(TrainingSession& s, const Model& m, int64_t replicas, int64_t firstReplica = 0) {
  std::vector<float> x;
  for (int64_t r = 0; r < replicas; ++r) {
    for (int k = 1; k <= 3; ++k) x.push_back(static_cast<float>((firstReplica + r + 1) * k));
  }
  NDArrayWrapper<float> xa(x.data(), s.expectedInputBufferShape(m.x));
  StepIO io({{m.x, xa}}, {});
  s.run(io);
}

std::vector<float> read(TrainingSession& s, const TensorId& id, const Shape& shape) {
  s.weightsToHost();
  std::vector<float> v(static_cast<size_t>(shapeNelms(shape)), -99.0f);
  WeightsIO io;
  io.insert(id, {v.data(), TensorInfo(DataType::FLOAT, shape)});
  s.readWeights(io);
  return v;
}

std::string sessionError(const std::string& proto, int64_t replicas) {
  try {
    auto b = Builder::createFromOnnxModel(proto);
    (void)makeSession(proto, b->getOutputTensorIds().at(0), replicated(replicas), ConstSGD(0.1f));
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// The value group g of a [3] weight starting at `start` holds after `steps` plain SGD steps with
// learning rate lr, when every member r contributes x_r = (r + 1) * [1, 2, 3] each step, divided by
// `divisor` (1 for Sum).
std::vector<float> expectedGroup(float start, const std::vector<int64_t>& members, int steps,
                                 float lr, float divisor = 1.0f) {
  float sum = 0;
  for (int64_t r : members) sum += static_cast<float>(r + 1);
  std::vector<float> out;
  for (int k = 1; k <= 3; ++k)
    out.push_back(start - static_cast<float>(steps) * lr * sum * k / divisor);
  return out;
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, float tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::abs(want[i])))
        << what << "[" << i << "]";
  }
}

std::vector<float> concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Consecutive(2) over 4 replicas: groups {0,1} and {2,3} each sum their own gradients; the weight
// that All replicas share sums all four. OnePerGroup reads [2,3]; AllReplicas reads [4,3].
TEST(GroupedWeights, EachGroupSumsItsOwnMembers) {
  const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2)), 2,
                           VariableSettings(CommGroup(CommGroupType::Consecutive, 2),
                                            VariableRetrievalMode::AllReplicas),
                           2);
  auto s = makeSession(m.proto, m.loss, replicated(4), ConstSGD(0.01f));
  for (int i = 0; i < 3; ++i) step(*s, m, 4);
  const auto g0 = expectedGroup(1.0f, {0, 1}, 3, 0.01f);
  const auto g1 = expectedGroup(2.0f, {2, 3}, 3, 0.01f);
  expectNear(read(*s, "w", {2, 3}), concat({g0, g1}), 1e-6f, "w");
  const auto v0 = expectedGroup(10.0f, {0, 1}, 3, 0.01f);
  const auto v1 = expectedGroup(20.0f, {2, 3}, 3, 0.01f);
  expectNear(read(*s, "v", {4, 3}), concat({v0, v0, v1, v1}), 1e-6f, "v (AllReplicas)");
}

// The report counts each grouped weight's reduction on its groups' communicator (docs/reports.md):
// Consecutive(2) over 4 replicas is an all-reduce over groups of 2 of each replica's [3] gradient.
TEST(GroupedWeights, TheReportCountsTheGroupsReduction) {
  const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2)), 2);
  auto s = makeSession(m.proto, m.loss, replicated(4), ConstSGD(0.01f));
  for (int i = 0; i < 3; ++i) step(*s, m, 4);
  const nlohmann::json c = nlohmann::json::parse(s->getReport())["execution"]["collectives"];
  ASSERT_EQ(c.size(), 1u) << c;
  EXPECT_EQ(c[0]["communicator"], ReplicaGrouping(4, 1, 2).str());
  EXPECT_EQ(c[0]["groupSize"], 2);
  EXPECT_EQ(c[0]["operation"], "all-reduce");
  EXPECT_EQ(c[0]["calls"], 3);
  EXPECT_EQ(c[0]["bytes"], 3 * 3 * 4);
}

// Orthogonal(2) over 4 replicas: groups {0,2} and {1,3}. Mean divides by the group size (2), not
// by the 4 replicas, with either strategy.
TEST(GroupedWeights, MeanDividesByTheGroupSize) {
  for (auto strategy : {MeanReductionStrategy::Post, MeanReductionStrategy::Running}) {
    const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Orthogonal, 2)), 2);
    auto s =
        makeSession(m.proto, m.loss, replicated(4, ReductionType::Mean, strategy), ConstSGD(0.01f));
    for (int i = 0; i < 2; ++i) step(*s, m, 4);
    expectNear(read(*s, "w", {2, 3}),
               concat({expectedGroup(1.0f, {0, 2}, 2, 0.01f, 2.0f),
                       expectedGroup(2.0f, {1, 3}, 2, 0.01f, 2.0f)}),
               1e-6f, strategy == MeanReductionStrategy::Post ? "Post" : "Running");
  }
}

// Ungrouped (None): every replica its own value (4 groups of one).
TEST(GroupedWeights, NoneGivesEveryReplicaItsOwnValue) {
  const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Ungrouped, 0)), 4);
  auto s = makeSession(m.proto, m.loss, replicated(4), ConstSGD(0.01f));
  step(*s, m, 4);
  std::vector<float> want;
  for (int64_t r = 0; r < 4; ++r) {
    const auto g = expectedGroup(static_cast<float>(r + 1), {r}, 1, 0.01f);
    want.insert(want.end(), g.begin(), g.end());
  }
  expectNear(read(*s, "w", {4, 3}), want, 1e-6f, "w");
}

// Section 9 case 6: after training with momentum the groups hold different values (and so does
// the velocity, which follows the weight's settings), members of a group identical;
// modelToHost -> a new session -> the same values.
TEST(GroupedWeights, TrainSaveReloadRead) {
  const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2),
                                            VariableRetrievalMode::AllReplicas),
                           2);
  const ConstSGD sgd(0.01f, 0.0f, 0.9f);
  auto s = makeSession(m.proto, m.loss, replicated(4), sgd);
  for (int i = 0; i < 3; ++i) step(*s, m, 4);
  const auto w = read(*s, "w", {4, 3});
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(w[k], w[3 + k]) << "replicas 0 and 1 share a group";
    EXPECT_EQ(w[6 + k], w[9 + k]) << "replicas 2 and 3 share a group";
    EXPECT_NE(w[k], w[6 + k]) << "the groups differ";
  }
  // The velocity inherits the weight's settings, retrieval mode included.
  const auto velocity = read(*s, "Accl___w", {4, 3});
  EXPECT_EQ(velocity[0], velocity[3]);
  EXPECT_NE(velocity[0], velocity[6]);

  const fs::path path =
      fs::path(::testing::TempDir()) / ("xtrain_grouped_" + std::to_string(::getpid()) + ".onnx");
  s->modelToHost(path.string());
  auto reloaded = makeSession(path.string(), m.loss, replicated(4), sgd);
  EXPECT_EQ(read(*reloaded, "w", {4, 3}), w);
  fs::remove(path);

  // writeWeights with AllReplicas takes each group's lowest replica's value.
  std::vector<float> mine = {1, 1, 1, 7, 7, 7, 2, 2, 2, 8, 8, 8};
  WeightsIO io;
  io.insert("w", {mine.data(), TensorInfo(DataType::FLOAT, {4, 3})});
  reloaded->writeWeights(io);
  reloaded->weightsFromHost();
  EXPECT_EQ(read(*reloaded, "w", {4, 3}), (std::vector<float>{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}));
}

TEST(GroupedWeights, BadSettingsAndValuesAreRefusedClearly) {
  // Groups that do not divide the replicas.
  std::string e = sessionError(
      sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 3)), 1).proto, 4);
  EXPECT_NE(e.find("do not divide"), std::string::npos) << e;
  // The initial value's leading dimension must be the group count (checked by the session ...).
  e = sessionError(sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2)), 1).proto,
                   4);
  EXPECT_NE(e.find("leading dimension must be the group count 2"), std::string::npos) << e;
  EXPECT_NE(e.find("'w'"), std::string::npos) << e;
  // ... or by the builder when it knows the replication factor.
  try {
    (void)sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2)), 3, {}, 1, 4);
    ADD_FAILURE() << "a [3,3] value for 2 groups was accepted";
  } catch (const error& err) {
    EXPECT_NE(std::string(err.what()).find("group count 2"), std::string::npos) << err.what();
  }
  // The retrieval mode PopART does not support either.
  e = sessionError(sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2),
                                             VariableRetrievalMode::AllReduceReplicas),
                            2)
                       .proto,
                   4);
  EXPECT_NE(e.find("AllReduceReplicas"), std::string::npos) << e;
  // A read buffer of the OnePerGroup shape for an AllReplicas weight.
  const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Consecutive, 2),
                                            VariableRetrievalMode::AllReplicas),
                           2);
  auto s = makeSession(m.proto, m.loss, replicated(4), ConstSGD(0.01f));
  try {
    (void)read(*s, "w", {2, 3});
    ADD_FAILURE() << "a [2,3] buffer was accepted for [4,3]";
  } catch (const error& err) {
    EXPECT_NE(std::string(err.what()).find("[4,3]"), std::string::npos) << err.what();
  }
  // CommGroup All keeps one value for all replicas, as before.
  EXPECT_EQ(sessionError(sumModel(VariableSettings(CommGroup(CommGroupType::All, 0)), 1).proto, 4),
            "");
}

// Section 9 case 7 (PopTorch's per-replica weights): 8 replicas; W (40 x 56) split 4 ways by
// columns, each part shared by an Orthogonal group of 2 ({g, g + 4}); X (24 x 40) split 2 ways by
// rows, replicas 0-3 taking the first half, 4-7 the second (a Consecutive(4) input grouping). Each
// group's gradient sums both halves, so 4 SGD steps match training the whole W on one device.
TEST(GroupedWeights, PerReplicaWeightsMatchTheWholeWeightOnOneDevice) {
  constexpr int64_t kIn = 40, kOut = 56, kRows = 24, kParts = 4, kCols = kOut / kParts;
  constexpr float kLr = 0.01f;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> X(kRows * kIn), W(kIn * kOut);
  for (auto& v : X) v = u(rng);
  for (auto& v : W) v = 0.2f * u(rng);

  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  b->embedReplicationFactor(8);
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kRows / 2, kIn}), "x");
  std::vector<float> parts;  // [4, 40, 14]: part g = columns [14 g, 14 g + 14)
  for (int64_t g = 0; g < kParts; ++g) {
    for (int64_t i = 0; i < kIn; ++i) {
      for (int64_t j = 0; j < kCols; ++j)
        parts.push_back(W[static_cast<size_t>(i * kOut + g * kCols + j)]);
    }
  }
  const TensorId w =
      b->addInitializedInputTensor(ConstVoidData::fromVector<float>({kParts, kIn, kCols}, parts),
                                   VariableSettings(CommGroup(CommGroupType::Orthogonal, 2)), "W");
  EXPECT_EQ(b->getTensorShape(w), (Shape{kIn, kCols})) << "the builder sees the per-replica shape";
  auto y = onnx.matmul({x, w});
  const TensorId loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({y, y})}, ReductionType::Sum);
  b->addOutputTensor(loss);
  auto s = makeSession(b->getModelProto(), loss, replicated(8), ConstSGD(kLr));

  std::vector<float> feed;  // [8, 12, 40]
  for (int64_t r = 0; r < 8; ++r) {
    const auto half = X.begin() + (r / 4) * (kRows / 2) * kIn;
    feed.insert(feed.end(), half, half + (kRows / 2) * kIn);
  }
  for (int i = 0; i < 4; ++i) {
    NDArrayWrapper<float> xa(feed.data(), s->expectedInputBufferShape(x));
    StepIO io({{x, xa}}, {});
    s->run(io);
  }

  // The whole W on one device, in double: loss = sum((X W)^2), grad = 2 X^T X W.
  std::vector<double> ref(W.begin(), W.end());
  for (int i = 0; i < 4; ++i) {
    std::vector<double> Y(kRows * kOut, 0.0), grad(kIn * kOut, 0.0);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t k = 0; k < kIn; ++k)
        for (int64_t j = 0; j < kOut; ++j) Y[r * kOut + j] += X[r * kIn + k] * ref[k * kOut + j];
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t k = 0; k < kIn; ++k)
        for (int64_t j = 0; j < kOut; ++j)
          grad[k * kOut + j] += 2.0 * X[r * kIn + k] * Y[r * kOut + j];
    for (size_t k = 0; k < ref.size(); ++k) ref[k] -= kLr * grad[k];
  }
  const auto got = read(*s, w, {kParts, kIn, kCols});
  double worst = 0;
  for (int64_t g = 0; g < kParts; ++g) {
    for (int64_t i = 0; i < kIn; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        const double want = ref[static_cast<size_t>(i * kOut + g * kCols + j)];
        worst =
            std::max(worst, std::abs(got[static_cast<size_t>((g * kIn + i) * kCols + j)] - want));
      }
    }
  }
  EXPECT_LE(worst, 1e-6) << "largest absolute difference from the whole-W training";
}

// ---- Several instances: GroupedSession.* runs GroupedWorker.* under xrun. ----

bool startedByXrun() {
  return std::getenv("XTRAIN_NUM_INSTANCES") != nullptr &&
         std::getenv("XTRAIN_TEST_OUT") != nullptr;
}

// 4 replicas in any layout: w by Orthogonal(2) ({0,2}, {1,3}), v by Consecutive(2) ({0,1}, {2,3},
// retrieved AllReplicas), momentum SGD, 3 steps; writes w [2,3], v [4,3] and w's velocity [2,3]
// to <XTRAIN_TEST_OUT>/<instance>.bin.
TEST(GroupedWorker, TrainGroupedWeights) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of GroupedSession.*, started by xrun";
  const Model m = sumModel(VariableSettings(CommGroup(CommGroupType::Orthogonal, 2)), 2,
                           VariableSettings(CommGroup(CommGroupType::Consecutive, 2),
                                            VariableRetrievalMode::AllReplicas),
                           2);
  SessionOptions o;
  dist::configureSessionOptions(o);
  auto s = makeSession(m.proto, m.loss, o, ConstSGD(0.01f, 0.0f, 0.9f));
  for (int i = 0; i < 3; ++i)
    step(*s, m, dist::getNumLocalReplicas(), dist::getReplicaIndexOffset());
  const auto out =
      concat({read(*s, "w", {2, 3}), read(*s, "v", {4, 3}), read(*s, "Accl___w", {2, 3})});
  // Collective with grouped weights: every instance calls it, the first writes the file.
  s->modelToHost((fs::path(std::getenv("XTRAIN_TEST_OUT")) / "model.onnx").string());
  std::ofstream file(fs::path(std::getenv("XTRAIN_TEST_OUT")) /
                         (std::to_string(dist::getInstanceIndex()) + ".bin"),
                     std::ios::binary);
  file.write(reinterpret_cast<const char*>(out.data()),
             static_cast<std::streamsize>(out.size() * 4));
}

int runUnderXrun(const std::string& layout, const fs::path& out, std::string& output) {
  fs::create_directories(out);
  const CommandResult r = runTestsUnderXrun(layout, "test_session", "GroupedWorker.*",
                                            "XTRAIN_TEST_OUT=" + out.string());
  output = r.output;
  return r.exitCode;
}

// Groups within an instance, groups spanning instances (w in 2x2, both in 4x1), and every
// instance's complete host view: all layouts give the values of one instance of 4 replicas.
TEST(GroupedSession, InstanceLayoutsAgree) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("xtrain_grouped_session_" + std::to_string(::getpid()));
  std::vector<float> first;
  for (const auto& [layout, instances] : std::vector<std::pair<std::string, int>>{
           {"-n 1 --num-replicas 4", 1}, {"-n 2 --num-replicas 4", 2}, {"-n 4", 4}}) {
    const fs::path out = dir / std::to_string(instances);
    std::string output;
    ASSERT_EQ(runUnderXrun(layout, out, output), 0) << "xrun " << layout << ":\n" << output;
    for (int i = 0; i < instances; ++i) {
      std::vector<float> got(24, -99.0f);
      std::ifstream in(out / (std::to_string(i) + ".bin"), std::ios::binary);
      in.read(reinterpret_cast<char*>(got.data()), 24 * 4);
      ASSERT_TRUE(in.good()) << layout << " instance " << i << ":\n" << output;
      if (first.empty()) {
        first = got;
        EXPECT_NE(first[0], first[3]) << "the groups of w differ";
      }
      expectNear(got, first, 1e-6f, layout + " instance " + std::to_string(i));
    }
    EXPECT_TRUE(fs::exists(out / "model.onnx")) << layout;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xtrain::testing
