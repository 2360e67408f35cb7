// Off-chip storage (docs/model-parallelism.md, "Off-chip storage"): weights, optimizer state and
// accumulators in streaming memory train to the same bits as on chip (SGD with momentum, Adam, with
// and without replicated tensor sharding, with gradient accumulation, across a checkpoint); the
// memory model charges them to streaming memory so that a model too large for an IPU fits; their
// loads and stores cost cycles and appear in the report and the trace; bad settings are refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "session/cycle_model.hpp"
#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/session_log.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/dist.hpp"

namespace xtrain::testing {
namespace {

using nlohmann::json;

const ConstSGD kMomentum(0.1f, 0.01f, 0.9f);

Adam adam() {
  return Adam({{"defaultLearningRate", {0.02f, false}}, {"defaultWeightDecay", {0.01f, true}}},
              AdamMode::Adam, WeightDecayMode::Decay);
}

TensorLocation locationOf(TensorStorage storage,
                          ReplicatedTensorSharding rts = ReplicatedTensorSharding::Off) {
  TensorLocation l;
  l.storage = storage;
  l.replicatedTensorSharding = rts;
  return l;
}

struct Layout {
  int64_t replicas = 1;
  int64_t af = 1;
  bool rts = false;  // optimizer state and weights sharded over all replicas
};

// Weights, optimizer state and accumulators off chip when `offChip` (the MLP's b2, 5 elements,
// stays on chip: below minElementsForOffChip).
SessionOptions optionsFor(const Layout& l, bool offChip) {
  SessionOptions o;
  o.enableReplicatedGraphs = l.replicas > 1;
  o.replicatedGraphCount = l.replicas;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  if (l.af > 1) {
    o.enableGradientAccumulation = true;
    o.accumulationFactor = l.af;
  }
  for (auto* s : {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings,
                  &o.accumulatorTensorLocationSettings}) {
    if (offChip) {
      s->location.storage = TensorStorage::OffChip;
      s->minElementsForOffChip = 10;
    }
    if (l.rts && s != &o.accumulatorTensorLocationSettings) {
      s->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
      s->minElementsForReplicatedTensorSharding = 10;
    }
  }
  return o;
}

std::vector<TensorId> weightsAndState(bool withAdam) {
  std::vector<TensorId> ids = {"W1", "b1", "W2", "b2"};
  for (const std::string w : {"W1", "b1", "W2", "b2"}) {
    if (withAdam) {
      ids.push_back("Accl1___" + w);
      ids.push_back("Accl2___" + w);
    } else {
      ids.push_back("Accl___" + w);
    }
  }
  return ids;
}

std::vector<float> train(const MlpModel& m, const Layout& l, bool offChip, const Optimizer& opt,
                         bool withAdam) {
  auto s = makeMlpSession(m, optionsFor(l, offChip), opt);
  trainMlpSteps(*s, m, l.replicas, 0, l.af, 0, 3);
  return readTensors(*s, weightsAndState(withAdam));
}

// Bit for bit: off-chip storage moves nothing on the simulated device.
void expectBitIdentical(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i] ? 1 : 0;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " values differ";
}

json reportOf(const Session& s) {
  return json::parse(s.getReport());
}

std::set<std::string> offChipNames(const json& report) {
  std::set<std::string> names;
  for (const auto& t : report.at("memory").at("offChipTensors")) names.insert(t.at("name"));
  return names;
}

TEST(OffChip, TrainsToTheSameBitsAsOnChip) {
  const MlpModel m = buildMlpModel();
  const std::vector<std::pair<std::string, Layout>> layouts = {
      {"1 replica", {1, 1, false}},
      {"4 replicas", {4, 1, false}},
      {"4 replicas, RTS", {4, 1, true}},
      {"2 replicas, af 3", {2, 3, false}},
      {"4 replicas, RTS, af 2", {4, 2, true}}};
  for (const auto& [name, layout] : layouts) {
    expectBitIdentical(train(m, layout, true, kMomentum, false),
                       train(m, layout, false, kMomentum, false), "SGD momentum, " + name);
    expectBitIdentical(train(m, layout, true, adam(), true), train(m, layout, false, adam(), true),
                       "Adam, " + name);
  }
}

// PopART's rule: the kind's settings with at least minElementsForOffChip elements; overrides win.
TEST(OffChip, WhichTensorsGoOffChip) {
  const MlpModel m = buildMlpModel();
  SessionOptions o = optionsFor({1, 2, false}, false);
  o.weightTensorLocationSettings.location.storage = TensorStorage::OffChip;
  o.weightTensorLocationSettings.minElementsForOffChip = 15;  // W1 (120), b1 (15), W2 (75)
  o.optimizerStateTensorLocationSettings.location.storage = TensorStorage::OffChip;
  o.optimizerStateTensorLocationSettings.minElementsForOffChip = 100;  // Accl___W1 only
  o.tensorLocationSettingsOverride["b1"] = locationOf(TensorStorage::OnChip);
  o.tensorLocationSettingsOverride["Accum___b2"] = locationOf(TensorStorage::OffChip);
  auto s = makeMlpSession(m, o, kMomentum);
  EXPECT_EQ(offChipNames(reportOf(*s)),
            (std::set<std::string>{"W1", "W2", "Accl___W1", "Accum___b2"}));
  // The default minimum (2) keeps scalars on chip.
  SessionOptions all = optionsFor({1, 1, false}, false);
  all.weightTensorLocationSettings.location.storage = TensorStorage::OffChip;
  EXPECT_EQ(offChipNames(reportOf(*makeMlpSession(m, all, kMomentum))),
            (std::set<std::string>{"W1", "b1", "W2", "b2"}));
}

// With replicated tensor sharding, streaming memory holds each replica's shard.
TEST(OffChip, ShardedTensorsAreShardsInStreamingMemory) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, optionsFor({4, 1, true}, true), kMomentum);
  std::map<std::string, uint64_t> bytes;
  const json report = reportOf(*s);
  for (const auto& t : report.at("memory").at("offChipTensors")) {
    if (t.at("ipu") == 0) bytes[t.at("name")] = t.at("bytes");
  }
  EXPECT_EQ(bytes.at("W1"), 30u * 4);  // 120 elements over 4 replicas
  EXPECT_EQ(bytes.at("Accl___W1"), 30u * 4);
  EXPECT_EQ(bytes.at("W2"), 19u * 4);  // ceil(75 / 4), the last shard zero-padded
  EXPECT_EQ(bytes.at("b1"), 4u * 4);   // ceil(15 / 4)
}

// A model whose weights and optimizer state overflow an IPU fits with them off chip: streaming
// memory holds them, the IPU only the largest set one op loads at once.
TEST(OffChip, WeightsOffChipMakeATooLargeModelFit) {
  const MlpModel m = buildMlpModel(4, 128, 128, 128);
  const auto onChipBytes = [&](bool offChip) {
    auto s = makeMlpSession(m, optionsFor({}, offChip), kMomentum);
    const json r = reportOf(*s);
    return std::pair<uint64_t, uint64_t>{r.at("memory").at("ipus").at(0).at("totalBytes"),
                                         r.at("memory").at("ipus").at(0).at("streamingBytes")};
  };
  const auto [onChip, noStreaming] = onChipBytes(false);
  const auto [offChipOnIpu, streaming] = onChipBytes(true);
  EXPECT_EQ(noStreaming, 0u);
  // W1 and W2 (64 KiB each), their velocities and b1, b2's velocity... all but b2's 128 floats.
  EXPECT_GE(streaming, 4u * 128 * 128 * 4);
  ASSERT_LT(offChipOnIpu + 4096, onChip);
  // An IPU between the two: on chip is out of memory, off chip fits.
  const uint64_t capacity = (onChip + offChipOnIpu) / 2;
  const auto device = [&] {
    return DeviceManager::createDeviceManager().createIpuModelDevice(
        {{"numIPUs", "1"}, {"tilesPerIPU", "1"}, {"memoryPerTile", std::to_string(capacity)}});
  };
  EXPECT_THROW(makeMlpSession(m, optionsFor({}, false), kMomentum, device()), OutOfMemoryException);
  auto s = makeMlpSession(m, optionsFor({}, true), kMomentum, device());
  trainMlpSteps(*s, m, 1, 0, 1, 0, 1);
  const std::string summary = s->getSummaryReport();
  EXPECT_CONTAINS(summary, "Streaming memory");
  EXPECT_CONTAINS(summary, "Off-chip tensors (streaming memory):");
  EXPECT_CONTAINS(summary, "off-chip staging: ");
}

// Each load and store costs CycleModel::remoteTransferCycles; the report counts them and the trace
// shows them as ops.
using OffChipCost = ScratchDirTest;

TEST_F(OffChipCost, LoadsAndStoresAreCostedReportedAndTraced) {
  const MlpModel m = buildMlpModel();
  const auto cyclesOf = [&](bool offChip, const std::string& trace) {
    SessionOptions o = optionsFor({}, offChip);
    o.instrumentWithHardwareCycleCounter = true;
    if (!trace.empty()) o.engineOptions = {{"trace.file", trace}};
    auto s = makeMlpSession(m, o, kMomentum);
    trainMlpSteps(*s, m, 1, 0, 1, 0, 1);
    const json r = reportOf(*s);
    return std::pair<uint64_t, json>{s->getCycleCount(), r.at("execution").at("offChipTransfers")};
  };
  const auto [onCycles, onTransfers] = cyclesOf(false, "");
  const std::string trace = path("offchip.json");
  const auto [offCycles, offTransfers] = cyclesOf(true, trace);
  EXPECT_EQ(onTransfers.at("loads"), 0);
  // Forward: W1, b1, W2 loaded; backward: W2 (the input gradient's MatMul); update: each weight and
  // velocity loaded and stored; accumulators: none with af 1 (the gradients are reduced in place).
  const uint64_t loads = offTransfers.at("loads"), stores = offTransfers.at("stores");
  EXPECT_GE(loads, 3u + 1 + 6);
  EXPECT_EQ(stores, 6u);  // W1, b1, W2 and their velocities after their updates
  EXPECT_EQ(offCycles - onCycles, static_cast<uint64_t>(offTransfers.at("cycles")));
  EXPECT_GT(offTransfers.at("cycles"), (loads + stores) * session::CycleModel::kRemoteOverhead);

  std::ifstream in(trace);
  ASSERT_TRUE(in.good()) << "no trace at " << trace;
  std::set<std::string> names;
  const json events = json::parse(in).at("traceEvents");
  for (const auto& e : events) {
    if (e.at("ph") == "X" && e.at("cat") == "op") names.insert(e.at("name"));
  }
  for (const std::string n :
       {"RemoteLoad W1", "RemoteStore W1", "RemoteLoad Accl___W1", "RemoteStore Accl___W1"}) {
    EXPECT_TRUE(names.count(n)) << n << " not in the trace of " << names.size();
  }
}

// A checkpoint of an off-chip job resumes on chip (and back) to the bits of an uninterrupted job.
using OffChipCheckpoint = ScratchDirTest;

TEST_F(OffChipCheckpoint, SavedOffChipResumesOnChip) {
  const MlpModel m = buildMlpModel();
  const Layout l{2, 2, false};
  auto whole = makeMlpSession(m, optionsFor(l, false), kMomentum);
  trainMlpSteps(*whole, m, 2, 0, 2, 0, 4);
  const auto want = readTensors(*whole, weightsAndState(false));
  for (const bool firstOffChip : {true, false}) {
    const std::string dir = path(firstOffChip ? "offchip" : "onchip");
    {
      auto first = makeMlpSession(m, optionsFor(l, firstOffChip), kMomentum);
      trainMlpSteps(*first, m, 2, 0, 2, 0, 2);
      first->saveCheckpoint(dir);
    }
    auto second = makeMlpSession(m, optionsFor(l, !firstOffChip), kMomentum);
    second->loadCheckpoint(dir);
    trainMlpSteps(*second, m, 2, 0, 2, 2, 2);
    expectBitIdentical(
        readTensors(*second, weightsAndState(false)), want,
        firstOffChip ? "saved off chip, resumed on chip" : "saved on chip, resumed off chip");
  }
}

// OffChip settings whose minimum leaves every tensor of the kind on chip say so.
using OffChipLog = SessionLogTest;

TEST_F(OffChipLog, AMinimumThatLeavesEveryTensorOnChipIsLogged) {
  const MlpModel m = buildMlpModel();
  SessionOptions o;
  o.weightTensorLocationSettings.location.storage = TensorStorage::OffChip;
  o.weightTensorLocationSettings.minElementsForOffChip = 1000;  // W1 has 120
  o.optimizerStateTensorLocationSettings.location.storage = TensorStorage::OffChip;
  auto s = makeMlpSession(m, o, kMomentum);
  const std::string log = logText();
  EXPECT_CONTAINS(log,
                  "weightTensorLocationSettings asks for OffChip storage, but none of its 4 "
                  "tensors has minElementsForOffChip = 1000");
  EXPECT_EQ(log.find("optimizerStateTensorLocationSettings asks"), std::string::npos) << log;
  EXPECT_TRUE(offChipNames(reportOf(*s)).count("Accl___W1"));
}

TEST(OffChip, BadSettingsAreRefusedNamingTheOption) {
  const MlpModel m = buildMlpModel();
  const auto make = [&](const SessionOptions& o) { makeMlpSession(m, o, kMomentum); };
  SessionOptions activations;
  activations.activationTensorLocationSettings.location.storage = TensorStorage::OffChip;
  expectError([&] { make(activations); },
              {"activationTensorLocationSettings", "OffChip", "execution phases"});
  SessionOptions unknown;
  unknown.tensorLocationSettingsOverride["W9"] = locationOf(TensorStorage::OffChip);
  expectError([&] { make(unknown); },
              {"tensorLocationSettingsOverride", "'W9'", "not a tensor", "Accl___<weight>"});
  SessionOptions unknownState;  // named as state, but of no weight of the model
  unknownState.tensorLocationSettingsOverride["Accl___W9"] = locationOf(TensorStorage::OffChip);
  expectError([&] { make(unknownState); }, {"tensorLocationSettingsOverride", "'Accl___W9'"});
  // The state of a weight that this optimizer does not keep: no effect (PopART programs share
  // options between sessions).
  SessionOptions noMomentum;
  noMomentum.tensorLocationSettingsOverride["Accl___W1"] = locationOf(TensorStorage::OffChip);
  EXPECT_TRUE(offChipNames(reportOf(*makeMlpSession(m, noMomentum, ConstSGD(0.1f)))).empty());
  SessionOptions input;
  input.tensorLocationSettingsOverride[m.x] = locationOf(TensorStorage::OffChip);
  expectError([&] { make(input); }, {"tensorLocationSettingsOverride", "'" + m.x + "'", "on chip"});
  SessionOptions sharded;
  sharded.tensorLocationSettingsOverride["W1"] =
      locationOf(TensorStorage::OffChip, ReplicatedTensorSharding::On);
  expectError([&] { make(sharded); },
              {"tensorLocationSettingsOverride", "'W1'", "replicatedTensorSharding On",
               "weightTensorLocationSettings"});
  SessionOptions negative;
  negative.weightTensorLocationSettings.minElementsForOffChip = -1;
  expectError([&] { make(negative); },
              {"weightTensorLocationSettings.minElementsForOffChip", "-1"});
  SessionOptions phases;
  phases.virtualGraphMode = VirtualGraphMode::ExecutionPhases;
  expectError([&] { make(phases); }, {"ExecutionPhases"});
}

// ---- Several instances: OffChipSession.* runs OffChipWorker.* under xrun. ----

// This instance's replicas of a 4-replica job with weights and state sharded over all replicas,
// off chip when XTRAIN_TEST_OFFCHIP is 1; writes them to <XTRAIN_TEST_OUT>/<instance>.bin.
TEST(OffChipWorker, Train) {
  if (std::getenv("XTRAIN_NUM_INSTANCES") == nullptr || std::getenv("XTRAIN_TEST_OUT") == nullptr) {
    GTEST_SKIP() << "an instance of OffChipSession.*, started by xrun";
  }
  const MlpModel m = buildMlpModel();
  const char* offChip = std::getenv("XTRAIN_TEST_OFFCHIP");
  SessionOptions o = optionsFor({dist::getNumLocalReplicas(), 1, true},
                                offChip != nullptr && std::string(offChip) == "1");
  dist::configureSessionOptions(o);
  auto s = makeMlpSession(m, o, kMomentum);
  trainMlpSteps(*s, m, 4, dist::getReplicaIndexOffset(), 1, 0, 3);
  const auto all = readTensors(*s, weightsAndState(false));
  std::ofstream out(std::filesystem::path(std::getenv("XTRAIN_TEST_OUT")) /
                        (std::to_string(dist::getInstanceIndex()) + ".bin"),
                    std::ios::binary);
  out.write(reinterpret_cast<const char*>(all.data()),
            static_cast<std::streamsize>(all.size() * sizeof(float)));
}

// Off-chip storage is each instance's own affair: 2 instances of 2 replicas train to the same bits
// with off-chip weights and state as on chip.
using OffChipSession = ScratchDirTest;

TEST_F(OffChipSession, InstancesTrainToTheBitsOfOnChipInstances) {
  std::vector<std::vector<float>> results[2];
  for (int offChip : {0, 1}) {
    const std::string out = path("out" + std::to_string(offChip));
    std::filesystem::create_directories(out);
    const CommandResult r = runTestsUnderXrun(
        "-n 2 --num-replicas 4", "test_session", "OffChipWorker.*",
        "XTRAIN_TEST_OUT=" + out + " XTRAIN_TEST_OFFCHIP=" + std::to_string(offChip));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    for (int i = 0; i < 2; ++i) {
      std::vector<float> got;
      std::ifstream in(std::filesystem::path(out) / (std::to_string(i) + ".bin"),
                       std::ios::binary | std::ios::ate);
      ASSERT_TRUE(in.good()) << r.output;
      got.resize(static_cast<size_t>(in.tellg()) / sizeof(float));
      in.seekg(0);
      in.read(reinterpret_cast<char*>(got.data()),
              static_cast<std::streamsize>(got.size() * sizeof(float)));
      results[offChip].push_back(std::move(got));
    }
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_FALSE(results[0][static_cast<size_t>(i)].empty());
    expectBitIdentical(results[1][static_cast<size_t>(i)], results[0][static_cast<size_t>(i)],
                       "instance " + std::to_string(i));
  }
}

}  // namespace
}  // namespace xtrain::testing
