// Replicated tensor sharding (docs/replication-semantics.md section 5, acceptance case 5 of section
// 9): training with sharded optimizer state (and weights) gives the weights and optimizer state of
// training without, over every sharding domain, with zero-padded shards and whole host views; the
// memory per simulated IPU shrinks; bad settings are refused. ShardedSession.* runs
// ShardedWorker.* under xrun for layouts of several instances.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

struct Sharding {
  bool state = false;
  bool weights = false;
  CommGroup domain;
  int minElements = 10;  // W1, b1 and W2 sharded; b2 (5 elements) kept whole
};

SessionOptions optionsFor(int64_t localReplicas, const Sharding& sh, int64_t af = 1) {
  SessionOptions o;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = localReplicas;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  if (af > 1) {
    o.enableGradientAccumulation = true;
    o.accumulationFactor = af;
  }
  for (auto [on, settings] : {std::pair{sh.state, &o.optimizerStateTensorLocationSettings},
                              std::pair{sh.weights, &o.weightTensorLocationSettings}}) {
    if (!on) continue;
    settings->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
    settings->location.shardingDomain = sh.domain;
    settings->minElementsForReplicatedTensorSharding = sh.minElements;
  }
  return o;
}

std::unique_ptr<TrainingSession> makeSession(const MlpModel& m, const SessionOptions& o,
                                             std::shared_ptr<DeviceInfo> device = nullptr) {
  return makeMlpSession(m, o, ConstSGD(0.1f, 0.01f, 0.9f), std::move(device));
}

// Weights and velocities, whole.
std::vector<float> readAll(TrainingSession& s) {
  return readTensors(s, mlpWeightsAndVelocities());
}

void expectSame(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::abs(got[i] - want[i]) > 1e-6f * std::max(1.0f, std::abs(want[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
      ++bad;
    }
  }
}

std::vector<float> reference(const MlpModel& m, int64_t af = 1) {
  auto s = makeSession(m, optionsFor(4, {}, af));
  trainMlpSteps(*s, m, 4, 0, af, 0, 3);
  return readAll(*s);
}

TEST(Sharding, SameWeightsAndStateAsWithoutOverEveryDomain) {
  const MlpModel m = buildMlpModel();
  const auto want = reference(m);
  const std::vector<std::pair<std::string, CommGroup>> domains = {
      {"All", CommGroup()},
      {"Consecutive(2)", CommGroup(CommGroupType::Consecutive, 2)},
      {"Orthogonal(2)", CommGroup(CommGroupType::Orthogonal, 2)}};
  for (const auto& [name, domain] : domains) {
    for (bool weights : {false, true}) {
      auto s = makeSession(m, optionsFor(4, {true, weights, domain}));
      trainMlpSteps(*s, m, 4, 0, 1, 0, 3);
      expectSame(readAll(*s), want, name + (weights ? " (weights and state)" : " (state)"));
    }
  }
}

TEST(Sharding, WithGradientAccumulation) {
  const MlpModel m = buildMlpModel();
  const auto want = reference(m, 2);
  auto s = makeSession(m, optionsFor(4, {true, true, CommGroup()}, 2));
  trainMlpSteps(*s, m, 4, 0, 2, 0, 3);
  expectSame(readAll(*s), want, "af 2");
}

// writeWeights of whole optimizer state reaches the shards, and reads back whole and unpadded.
TEST(Sharding, HostViewsAreWholeAndUnpadded) {
  const MlpModel m = buildMlpModel();
  auto s = makeSession(m, optionsFor(4, {true, false, CommGroup()}));
  std::vector<float> velocity(15);
  for (size_t i = 0; i < velocity.size(); ++i) velocity[i] = static_cast<float>(i + 1);
  WeightsIO io;
  io.insert("Accl___b1", {velocity.data(), TensorInfo(DataType::FLOAT, {15})});
  s->writeWeights(io);
  s->weightsFromHost();
  std::vector<float> back(15, -1.0f);
  WeightsIO out;
  out.insert("Accl___b1", {back.data(), TensorInfo(DataType::FLOAT, {15})});
  s->weightsToHost();
  s->readWeights(out);
  EXPECT_EQ(back, velocity);
}

uint64_t bytesOf(const std::string& report, const std::string& row) {
  // The first IPU's row: "  Optimizer state   1.2 KiB (1234 B)" or "  Optimizer state   960 B".
  std::smatch match;
  const std::regex re("\n  " + row + " +(?:[0-9.]+ [KMG]iB \\()?([0-9]+) B");
  if (!std::regex_search(report, match, re)) {
    ADD_FAILURE() << "no '" << row << "' row in\n" << report;
    return 0;
  }
  return std::stoull(match[1].str());
}

// Section 9 case 5: optimizer-state memory per simulated IPU shrinks by about (k - 1) / k, and a
// model that overflows an IPU without sharding fits with it.
TEST(Sharding, SavesMemoryAndMakesAnOverflowingModelFit) {
  const MlpModel m = buildMlpModel();
  auto whole = makeSession(m, optionsFor(4, {}));
  auto sharded = makeSession(m, optionsFor(4, {true, true, CommGroup()}));
  const uint64_t stateWhole = bytesOf(whole->getSummaryReport(), "OptimizerState");
  const uint64_t stateSharded = bytesOf(sharded->getSummaryReport(), "OptimizerState");
  // Velocities of 120 + 15 + 75 + 5 floats whole; 30 + 4 + 19 + 5 sharded (b2 stays whole), plus
  // the hyperparameter tensors both keep.
  EXPECT_EQ(stateWhole - stateSharded, static_cast<uint64_t>((120 + 15 + 75 - 30 - 4 - 19) * 4))
      << whole->getSummaryReport() << sharded->getSummaryReport();
  const uint64_t weightsWhole = bytesOf(whole->getSummaryReport(), "Weights");
  const uint64_t weightsSharded = bytesOf(sharded->getSummaryReport(), "Weights");
  EXPECT_EQ(weightsWhole - weightsSharded,
            static_cast<uint64_t>((120 + 15 + 75 - 30 - 4 - 19) * 4));

  // An IPU of one tile whose memory lies between the two totals.
  const uint64_t totalWhole = bytesOf(whole->getSummaryReport(), "Total");
  const uint64_t totalSharded = bytesOf(sharded->getSummaryReport(), "Total");
  ASSERT_LT(totalSharded, totalWhole);
  const uint64_t capacity = (totalWhole + totalSharded) / 2;
  auto device = [&] {
    return DeviceManager::createDeviceManager().createIpuModelDevice(
        {{"numIPUs", "4"}, {"tilesPerIPU", "1"}, {"memoryPerTile", std::to_string(capacity)}});
  };
  EXPECT_THROW(makeSession(m, optionsFor(4, {}), device()), OutOfMemoryException);
  auto fits = makeSession(m, optionsFor(4, {true, true, CommGroup()}), device());
  trainMlpSteps(*fits, m, 4, 0, 1, 0, 1);
}

std::string sessionError(const std::string& proto, const TensorId& loss, const SessionOptions& o,
                         bool training = true) {
  try {
    auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "4"}});
    if (training) {
      (void)TrainingSession::createFromOnnxModel(proto, DataFlow(1), loss, ConstSGD(0.1f), device,
                                                 {}, o);
    } else {
      (void)InferenceSession::createFromOnnxModel(proto, DataFlow(1, {loss}), device, {}, o);
    }
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST(Sharding, BadSettingsAreRefusedClearly) {
  const MlpModel m = buildMlpModel();
  auto expectError = [&](const SessionOptions& o, const std::string& part, bool training = true) {
    const std::string e = sessionError(m.proto, m.loss, o, training);
    EXPECT_NE(e.find(part), std::string::npos) << "expected '" << part << "' in: " << e;
  };
  expectError(optionsFor(4, {true, false, CommGroup(CommGroupType::Consecutive, 3)}),
              "Consecutive(3)");
  expectError(optionsFor(4, {true, false, CommGroup(CommGroupType::Ungrouped, 0)}),
              "shardingDomain is None");
  SessionOptions differ = optionsFor(4, {true, true, CommGroup()});
  differ.weightTensorLocationSettings.location.shardingDomain =
      CommGroup(CommGroupType::Consecutive, 2);
  expectError(differ, "different domains");
  SessionOptions accumulators = optionsFor(4, {}, 2);
  accumulators.accumulatorTensorLocationSettings.location.replicatedTensorSharding =
      ReplicatedTensorSharding::On;
  expectError(accumulators, "accumulators");
  SessionOptions activations = optionsFor(4, {});
  activations.activationTensorLocationSettings.location.replicatedTensorSharding =
      ReplicatedTensorSharding::On;
  expectError(activations, "activations cannot be sharded");
  expectError(optionsFor(4, {true, false, CommGroup()}), "inference session", false);

  // A variable whose VariableSettings domain is None (every replica its own value).
  auto b = Builder::create();
  auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {16}), "x");
  std::vector<float> w(4 * 16, 0.5f);
  b->embedReplicationFactor(4);
  auto wt =
      b->addInitializedInputTensor(ConstVoidData::fromVector<float>({4, 16}, w),
                                   VariableSettings(CommGroup(CommGroupType::Ungrouped, 0)), "w");
  auto loss =
      b->aiGraphcoreOpset1().identityloss({b->aiOnnxOpset13().mul({x, wt})}, ReductionType::Sum);
  b->addOutputTensor(loss);
  const std::string e =
      sessionError(b->getModelProto(), loss, optionsFor(4, {true, false, CommGroup()}));
  EXPECT_NE(e.find("weight 'w' cannot be sharded"), std::string::npos) << e;
  EXPECT_NE(e.find("domain None"), std::string::npos) << e;
}

// ---- Several instances: ShardedSession.* runs ShardedWorker.* under xrun. ----

bool startedByXrun() {
  return std::getenv("XTRAIN_NUM_INSTANCES") != nullptr &&
         std::getenv("XTRAIN_TEST_OUT") != nullptr;
}

CommGroup domainFromEnvironment() {
  const char* d = std::getenv("XTRAIN_TEST_DOMAIN");
  if (d != nullptr && std::string(d) == "orthogonal")
    return CommGroup(CommGroupType::Orthogonal, 2);
  return CommGroup();
}

// This instance's replicas of a 4-replica job with sharded weights and state over
// XTRAIN_TEST_DOMAIN (all or orthogonal); writes readAll() to <XTRAIN_TEST_OUT>/<instance>.bin.
TEST(ShardedWorker, Train) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of ShardedSession.*, started by xrun";
  const MlpModel m = buildMlpModel();
  SessionOptions o = optionsFor(dist::getNumLocalReplicas(), {true, true, domainFromEnvironment()});
  dist::configureSessionOptions(o);
  auto s = makeSession(m, o);
  trainMlpSteps(*s, m, 4, dist::getReplicaIndexOffset(), 1, 0, 3);
  const auto all = readAll(*s);
  std::ofstream out(fs::path(std::getenv("XTRAIN_TEST_OUT")) /
                        (std::to_string(dist::getInstanceIndex()) + ".bin"),
                    std::ios::binary);
  out.write(reinterpret_cast<const char*>(all.data()),
            static_cast<std::streamsize>(all.size() * 4));
}

TEST(ShardedSession, InstanceLayoutsMatchTrainingWithoutSharding) {
  const MlpModel m = buildMlpModel();
  const auto want = reference(m);
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("xtrain_sharded_session_" + std::to_string(::getpid()));
  for (const std::string domain : {"all", "orthogonal"}) {
    for (const auto& [layout, instances] :
         std::vector<std::pair<std::string, int>>{{"-n 2 --num-replicas 4", 2}, {"-n 4", 4}}) {
      const fs::path out = dir / (domain + std::to_string(instances));
      fs::create_directories(out);
      const CommandResult r =
          runTestsUnderXrun(layout, "test_session", "ShardedWorker.*",
                            "XTRAIN_TEST_OUT=" + out.string() + " XTRAIN_TEST_DOMAIN=" + domain);
      ASSERT_EQ(r.exitCode, 0) << "xrun " << layout << ":\n" << r.output;
      const std::string& output = r.output;
      for (int i = 0; i < instances; ++i) {
        std::vector<float> all(want.size(), -99.0f);
        std::ifstream in(out / (std::to_string(i) + ".bin"), std::ios::binary);
        in.read(reinterpret_cast<char*>(all.data()), static_cast<std::streamsize>(all.size() * 4));
        ASSERT_TRUE(in.good()) << output;
        expectSame(all, want, domain + " " + layout + " instance " + std::to_string(i));
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xtrain::testing
