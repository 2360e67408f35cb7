// Distributed replicated graphs through the C++ API, with real processes: this test binary starts
// itself under `xrun` (DistributedSession.*); the instances run the DistributedWorker.* cases,
// which skip unless xrun started them. Section 9 case 4 of docs/replication-semantics.md (instances
// x local replicas = 1x4, 2x2, 4x1 train to the same weights) and broadcastWeights.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "testing/file_testing.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

bool startedByXrun() {
  return std::getenv("XTRAIN_NUM_INSTANCES") != nullptr &&
         std::getenv("XTRAIN_TEST_OUT") != nullptr;
}

struct Mlp {
  std::string proto;
  TensorId x, labels, loss;
};

// 6 -> 5 -> 3 MLP, mean softmax cross-entropy over a micro-batch of 4.
Mlp buildMlp() {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  Mlp m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {4, 6}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {4}), "labels");
  auto h = onnx.relu({onnx.add({onnx.matmul({m.x, weight({6, 5}, "W1")}), weight({5}, "b1")})});
  auto logits = onnx.add({onnx.matmul({h, weight({5, 3}, "W2")}), weight({3}, "b2")});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

// A session of this instance's replicas on an IPU-model device (not the pool, so concurrent jobs
// never compete for IPUs).
// engineOptions: SessionOptions::engineOptions (e.g. autoReport).
std::unique_ptr<TrainingSession> makeSession(
    const Mlp& m, const std::map<std::string, std::string>& engineOptions = {}) {
  SessionOptions o;
  dist::configureSessionOptions(o);
  o.engineOptions = engineOptions;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  const int64_t ipus = dist::getNumLocalReplicas();
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(ipus)}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss,
                                                ConstSGD(0.1f, 0.01f, 0.9f), device, {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

std::vector<float> readW1(TrainingSession& s) {
  s.weightsToHost();
  std::vector<float> w(30);
  WeightsIO io;
  io.insert("W1", {w.data(), TensorInfo(DataType::FLOAT, {6, 5})});
  s.readWeights(io);
  return w;
}

// Each instance trains its replicas' part of the same global batches (16 samples per step, replica
// g of the job taking samples [4g, 4g+4)) and writes W1 to <XTRAIN_TEST_OUT>/<instance>.bin, and
// its reports to <XTRAIN_TEST_OUT>/reports (autoReport: one set of files per instance).
TEST(DistributedWorker, TrainOnTheGlobalBatch) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of DistributedSession.*, started by xrun";
  const Mlp m = buildMlp();
  auto s = makeSession(m, {{"autoReport.all", "true"},
                           {"autoReport.directory",
                            (fs::path(std::getenv("XTRAIN_TEST_OUT")) / "reports").string()}});
  const int64_t L = dist::getNumLocalReplicas();
  const int64_t offset = dist::getReplicaIndexOffset();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (int step = 0; step < 4; ++step) {
    std::vector<float> x(16 * 6);
    std::vector<int32_t> y(16);
    for (auto& v : x) v = normal(rng);
    for (auto& v : y) v = static_cast<int32_t>(rng() % 3);
    std::vector<float> xs(x.begin() + offset * 4 * 6, x.begin() + (offset + L) * 4 * 6);
    std::vector<int32_t> ys(y.begin() + offset * 4, y.begin() + (offset + L) * 4);
    NDArrayWrapper<float> xa(xs.data(), s->expectedInputBufferShape(m.x));
    NDArrayWrapper<int32_t> ya(ys.data(), s->expectedInputBufferShape(m.labels));
    StepIO io({{m.x, xa}, {m.labels, ya}}, {});
    s->run(io);
  }
  const auto w = readW1(*s);
  std::ofstream out(fs::path(std::getenv("XTRAIN_TEST_OUT")) /
                        (std::to_string(dist::getInstanceIndex()) + ".bin"),
                    std::ios::binary);
  out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
}

// Every instance writes its own W1 (all elements = its index); broadcastWeights(last) gives every
// replica of every instance the last instance's values; a root out of range is refused.
TEST(DistributedWorker, BroadcastWeights) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of DistributedSession.*, started by xrun";
  const Mlp m = buildMlp();
  auto s = makeSession(m);
  const int n = static_cast<int>(dist::getNumInstances());
  std::vector<float> mine(30, static_cast<float>(dist::getInstanceIndex()));
  WeightsIO io;
  io.insert("W1", {mine.data(), TensorInfo(DataType::FLOAT, {6, 5})});
  s->writeWeights(io);
  s->weightsFromHost();
  s->broadcastWeights(n - 1);
  EXPECT_EQ(readW1(*s), std::vector<float>(30, static_cast<float>(n - 1)));
  try {
    s->broadcastWeights(n);
    ADD_FAILURE() << "a root out of range was accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("rootRank " + std::to_string(n) + " is out of range"),
              std::string::npos)
        << e.what();
  }
}

// Every instance runs this binary's DistributedWorker.* cases; bounded (runCommand).
CommandResult runUnderXrun(const std::string& layout, const fs::path& out) {
  fs::create_directories(out);
  return runTestsUnderXrun(layout, "test_session", "DistributedWorker.*",
                           "XTRAIN_TEST_OUT=" + out.string());
}

std::vector<float> readBin(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> w(30, -99.0f);
  in.read(reinterpret_cast<char*>(w.data()), 30 * 4);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return w;
}

// Replication options that place this process where the launcher did not (here: instance 1 of 2 in
// a process started alone) are an error naming both, at once, rather than a wait for instances that
// will never come.
TEST(DistributedSession, OptionsThatDisagreeWithTheLaunchAreAnError) {
  if (startedByXrun()) GTEST_SKIP() << "a case for a process started alone";
  const Mlp m = buildMlp();
  SessionOptions o;
  o.enableDistributedReplicatedGraphs = true;
  o.globalReplicationFactor = 2;
  o.globalReplicaOffset = 1;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(0.1f),
                                                device, {}, o);
  try {
    s->prepareDevice();
    FAIL() << "prepareDevice accepted options for instance 1 of 2 in a process started alone";
  } catch (const error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("place this process as instance 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("launched as instance 0 of 1"), std::string::npos) << what;
  }
}

TEST(DistributedSession, InstanceLayoutsTrainTheSameWeightsAndBroadcastWorks) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("xtrain_dist_session_" + std::to_string(::getpid()));
  const std::vector<std::pair<std::string, int>> layouts = {
      {"-n 1 --num-replicas 4", 1}, {"-n 2 --num-replicas 4", 2}, {"-n 4", 4}};
  std::vector<std::vector<float>> first;
  for (const auto& [layout, instances] : layouts) {
    const fs::path out = dir / std::to_string(instances);
    const CommandResult r = runUnderXrun(layout, out);
    ASSERT_EQ(r.exitCode, 0) << "xrun " << layout << ":\n" << r.output;
    for (int i = 0; i < instances; ++i) {
      // Each instance's report: 4 runs, the gradients all-reduced over the job's 4 replicas.
      const fs::path report =
          out / "reports" / (instances == 1 ? "report.json" : format("report.{}.json", i));
      const nlohmann::json e = nlohmann::json::parse(readFileBytes(report.string()))["execution"];
      EXPECT_EQ(e["runs"], 4) << report;
      ASSERT_EQ(e["collectives"].size(), 1u) << report;
      EXPECT_EQ(e["collectives"][0]["groupSize"], 4) << report;
      EXPECT_EQ(e["collectives"][0]["calls"], 4) << report;
      EXPECT_EQ(e["collectives"][0]["bytes"], 4 * (30 + 5 + 15 + 3) * 4) << report;
      const auto w = readBin(out / (std::to_string(i) + ".bin"));
      if (first.empty()) first.push_back(w);
      for (size_t k = 0; k < w.size(); ++k) {
        EXPECT_NEAR(w[k], first[0][k], 1e-5 * std::max(1.0f, std::abs(first[0][k])))
            << "layout " << layout << " instance " << i << " W1[" << k << "]";
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xtrain::testing
