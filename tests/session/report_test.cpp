// The profiling surface (docs/reports.md): getSummaryReport(resetProfile), getReport's JSON,
// getSerializedGraph, getCycleCount on the simulated clock, engineOptions autoReport.* and
// reportOptions, and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "testing/error_testing.hpp"
#include "testing/file_testing.hpp"
#include "testing/planted_files.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

using nlohmann::json;

SessionOptions replicated(int64_t replicas, int64_t af = 1) {
  SessionOptions o;
  if (replicas > 1) {
    o.enableReplicatedGraphs = true;
    o.replicatedGraphCount = replicas;
  }
  if (af > 1) {
    o.enableGradientAccumulation = true;
    o.accumulationFactor = af;
  }
  return o;
}

json reportOf(const Session& s) {
  return json::parse(s.getReport());
}

// Bytes of the trained weights' gradients (FLOAT, as the weights).
uint64_t gradientBytes(const Session& s) {
  uint64_t bytes = 0;
  for (const char* w : {"W1", "b1", "W2", "b2"}) {
    bytes += static_cast<uint64_t>(s.getInfo(w).nbytes());
  }
  return bytes;
}

TEST(Report, CountsRunsPhasesCollectivesAndHostTransfers) {
  const MlpModel m = buildMlpModel();
  const int64_t replicas = 2, af = 2, steps = 3;
  auto s = makeMlpSession(m, replicated(replicas, af), ConstSGD(0.1f));
  trainMlpSteps(*s, m, replicas, 0, af, 0, steps);
  const json r = reportOf(*s);
  EXPECT_EQ(r["schema"], "xtrain.report");
  EXPECT_EQ(r["session"]["localReplicas"], replicas);
  const json& e = r["execution"];
  EXPECT_EQ(e["runs"], steps);
  EXPECT_EQ(e["batches"], steps);
  EXPECT_EQ(e["microBatches"], steps * af);

  // Every instruction ran once per run of its phase; replica 0's kernel time fits in run().
  double opSeconds = 0;
  for (const auto& op : e["ops"]) {
    EXPECT_EQ(op["calls"], e["phases"][op["phase"].get<std::string>()]["runs"]) << op;
    EXPECT_GE(op["seconds"].get<double>(), 0.0);
    opSeconds += op["seconds"].get<double>();
  }
  EXPECT_GT(opSeconds, 0.0);
  EXPECT_LE(opSeconds, e["runSeconds"].get<double>());
  EXPECT_NEAR(opSeconds, e["kernelSeconds"].get<double>(), 1e-9);
  EXPECT_EQ(e["phases"]["Forward"]["runs"], steps * af);
  EXPECT_EQ(e["phases"]["Backward"]["runs"], steps * af);
  EXPECT_EQ(e["phases"]["Update"]["runs"], steps);

  // One all-reduce of every gradient over the 2 replicas per step.
  ASSERT_EQ(e["collectives"].size(), 1u) << e["collectives"];
  const json& c = e["collectives"][0];
  EXPECT_EQ(c["communicator"], "replicas");
  EXPECT_EQ(c["groupSize"], replicas);
  EXPECT_EQ(c["operation"], "all-reduce");
  EXPECT_EQ(c["what"], "gradients");
  EXPECT_EQ(c["calls"], steps);
  EXPECT_EQ(c["bytes"].get<uint64_t>(), steps * gradientBytes(*s));

  // x and labels for every micro-batch and replica; no anchors.
  const uint64_t sampleBytes = static_cast<uint64_t>(m.batch * m.in * 4 + m.batch * 4);
  EXPECT_EQ(e["hostTransfers"]["inputs"]["count"], steps * af * replicas * 2);
  EXPECT_EQ(e["hostTransfers"]["inputs"]["bytes"].get<uint64_t>(),
            static_cast<uint64_t>(steps * af * replicas) * sampleBytes);
  EXPECT_EQ(e["hostTransfers"]["anchors"]["count"], 0);

  // Memory by class on each replica's IPU, as the text report says.
  ASSERT_EQ(r["memory"]["ipus"].size(), 2u);
  for (const auto& ipu : r["memory"]["ipus"]) {
    EXPECT_EQ(ipu["classes"]["Weights"].get<uint64_t>(), gradientBytes(*s));
    EXPECT_GT(ipu["classes"]["OptimizerState"].get<uint64_t>(), 0u);
  }
  EXPECT_TRUE(e["cycles"].is_null());  // instrumentWithHardwareCycleCounter is off

  const std::string text = s->getSummaryReport(false);
  EXPECT_CONTAINS(text, "execution profile: 3 run(s), 3 batch(es), 6 micro-batch(es)");
  EXPECT_CONTAINS(text, "by phase:  ");
  EXPECT_CONTAINS(text, "slowest ops:");
  EXPECT_CONTAINS(text, "all-reduce of gradients over replicas (2 replicas): 3 call(s)");
  EXPECT_CONTAINS(text, "host transfers: inputs in 24 buffer(s)");
  EXPECT_CONTAINS(text, "Memory report");
}

// Weights updated on shards: their gradients are reduce-scattered over the sharding domain.
TEST(Report, ShardedGradientsAreReduceScattered) {
  const MlpModel m = buildMlpModel();
  SessionOptions o = replicated(2);
  for (auto* settings :
       {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings}) {
    settings->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
    settings->minElementsForReplicatedTensorSharding = 1;
  }
  auto s = makeMlpSession(m, o, ConstSGD(0.1f, 0, 0.9f));
  trainMlpSteps(*s, m, 2, 0, 1, 0, 2);
  const json c = reportOf(*s)["execution"]["collectives"];
  ASSERT_EQ(c.size(), 1u) << c;
  EXPECT_EQ(c[0]["operation"], "reduce-scatter");
  EXPECT_EQ(c[0]["what"], "gradients");
  EXPECT_EQ(c[0]["groupSize"], 2);
  EXPECT_EQ(c[0]["calls"], 2);
  EXPECT_EQ(c[0]["bytes"].get<uint64_t>(), 2 * gradientBytes(*s));
}

TEST(Report, ReportsNeedAPreparedSession) {
  const MlpModel m = buildMlpModel();
  auto s = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1), m.loss, ConstSGD(0.1f),
      DeviceManager::createDeviceManager().createIpuModelDevice({}));
  expectError([&] { s->getReport(); }, {"getReport", "prepareDevice()"});
  expectError([&] { s->getSerializedGraph(); }, {"getSerializedGraph", "prepareDevice()"});
  EXPECT_CONTAINS(s->getSummaryReport(), "not computed yet (call prepareDevice())");
}

TEST(Report, ResetProfileZeroesTheExecutionCounters) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, replicated(2), ConstSGD(0.1f));
  trainMlpSteps(*s, m, 2, 0, 1, 0, 2);
  // Without a reset the counters stay.
  EXPECT_CONTAINS(s->getSummaryReport(false), "execution profile: 2 run(s)");
  EXPECT_CONTAINS(s->getSummaryReport(false), "execution profile: 2 run(s)");
  EXPECT_EQ(reportOf(*s)["execution"]["runs"], 2);
  EXPECT_CONTAINS(s->getSummaryReport(true), "execution profile: 2 run(s)");
  json r = reportOf(*s);
  EXPECT_EQ(r["execution"]["runs"], 0);
  EXPECT_EQ(r["execution"]["collectives"].size(), 0u);
  EXPECT_EQ(r["execution"]["hostTransfers"]["inputs"]["count"], 0);
  for (const auto& op : r["execution"]["ops"]) {
    EXPECT_EQ(op["calls"], 0);
    EXPECT_EQ(op["seconds"].get<double>(), 0.0);
  }
  EXPECT_EQ(r["session"]["stepsRun"], 2);  // not an execution counter
  EXPECT_CONTAINS(s->getSummaryReport(), "no run() since the profile was reset");
  trainMlpSteps(*s, m, 2, 0, 1, 2, 1);
  r = reportOf(*s);
  EXPECT_EQ(r["execution"]["runs"], 1);
  EXPECT_EQ(r["execution"]["collectives"][0]["calls"], 1);
}

TEST(Report, CycleCountIsDeterministicAndNeedsTheOption) {
  const MlpModel m = buildMlpModel();
  auto plain = makeMlpSession(m, replicated(2), ConstSGD(0.1f));
  expectError([&] { plain->getCycleCount(); }, {"instrumentWithHardwareCycleCounter"});

  SessionOptions o = replicated(2);
  o.instrumentWithHardwareCycleCounter = true;
  auto a = makeMlpSession(m, o, ConstSGD(0.1f));
  auto b = makeMlpSession(m, o, ConstSGD(0.1f));
  // PopART's rule: no count before the first run.
  expectError([&] { a->getCycleCount(); }, {"Must call run before getCycleCount"});
  trainMlpSteps(*a, m, 2, 0, 1, 0, 1);
  trainMlpSteps(*b, m, 2, 0, 1, 5, 1);  // other data, the same program
  const uint64_t cycles = a->getCycleCount();
  EXPECT_EQ(b->getCycleCount(), cycles);
  // At least the instructions of one micro-batch and the update; the reduction and the host
  // transfers add more.
  const json r = reportOf(*a);
  uint64_t instructions = 0;
  for (const auto& op : r["execution"]["ops"]) instructions += op["cyclesPerCall"].get<uint64_t>();
  EXPECT_GT(cycles, instructions);
  EXPECT_EQ(r["execution"]["cycles"]["lastRun"], cycles);
  // The next run counts the same; resetting the profile keeps the device's counter.
  trainMlpSteps(*a, m, 2, 0, 1, 1, 1);
  EXPECT_EQ(a->getCycleCount(), cycles);
  a->getSummaryReport(true);
  EXPECT_EQ(a->getCycleCount(), cycles);
  EXPECT_CONTAINS(a->getSummaryReport(), "cycles (instrumentWithHardwareCycleCounter");
  expectError([&] { a->getCycleCount("inner"); },
              {"inner", "no cycle counter has this id", "hardwareInstrumentations"});

  SessionOptions accumulated = replicated(2, 2);
  accumulated.instrumentWithHardwareCycleCounter = true;
  auto c = makeMlpSession(m, accumulated, ConstSGD(0.1f));  // two micro-batches a step
  trainMlpSteps(*c, m, 2, 0, 2, 0, 1);
  EXPECT_GT(c->getCycleCount(), cycles);
}

TEST(Report, SerializedGraphListsTheLoweredOpsWithTheirFlops) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, replicated(1), ConstSGD(0.1f));
  const json g = json::parse(s->getSerializedGraph());
  EXPECT_EQ(g["schema"], "xtrain.serialized-graph");
  bool sawMatMul = false;
  std::set<std::string> phases;
  for (const auto& p : g["programs"]) {
    phases.insert(p["phase"].get<std::string>());
    for (const auto& i : p["instructions"]) {
      if (p["phase"] == "Forward" && i["type"] == "MatMul" && i["inputs"][1] == "W1") {
        // [batch, in] x [in, hidden]
        EXPECT_EQ(i["flops"].get<double>(), 2.0 * m.batch * m.in * m.hidden);
        EXPECT_GT(i["cycles"].get<uint64_t>(), 0u);
        sawMatMul = true;
      }
    }
  }
  EXPECT_TRUE(sawMatMul) << g["programs"];
  EXPECT_EQ(phases, (std::set<std::string>{"Forward", "Backward", "Update"}));
  EXPECT_FALSE(g["tensors"].empty());
}

class AutoReport : public ScratchDirTest {};

TEST_F(AutoReport, WritesTheReportsAtTheEndOfEachRun) {
  const MlpModel m = buildMlpModel();
  SessionOptions o = replicated(2);
  const std::string dir = path("reports/nested");  // created by the session
  o.engineOptions = {{"autoReport.all", "true"}, {"autoReport.directory", dir}};
  auto s = makeMlpSession(m, o, ConstSGD(0.1f));
  EXPECT_TRUE(std::filesystem::exists(dir + "/serialized_graph.json"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.json"));
  for (int run = 1; run <= 2; ++run) {
    trainMlpSteps(*s, m, 2, 0, 1, run, 1);
    const json r = json::parse(readFileBytes(dir + "/report.json"));
    EXPECT_EQ(r["execution"]["runs"], run);
    EXPECT_CONTAINS(readFileBytes(dir + "/summary.txt"),
                    format("execution profile: {} run(s)", run));
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.json.tmp"));
}

// The report directory may be shared: FILE.tmp planted beside each report (a link to a victim
// file, a file, a FIFO; another user's trap, issue 27) is neither written through nor used, and
// no temporary is left behind. Names the session chose in logDir (memory-report.txt, Fwd0.dot)
// planted as links to the victim are replaced, not followed.
TEST_F(AutoReport, NothingPlantedBesideTheReportsIsWrittenThrough) {
  const MlpModel m = buildMlpModel();
  const std::string dir = path("reports");
  std::filesystem::create_directories(dir);
  PlantedTemporaries planted(path("victim"));
  planted.plantBeside(dir + "/report.json", PlantKind::SymlinkToVictim);
  planted.plantBeside(dir + "/summary.txt", PlantKind::Fifo);
  planted.plantBeside(dir + "/serialized_graph.json", PlantKind::RegularFile);
  for (const char* name : {"memory-report.txt", "Fwd0.dot"}) {
    std::filesystem::create_symlink(path("victim"), dir + "/" + name);
  }
  SessionOptions o;
  o.engineOptions = {{"autoReport.all", "true"}, {"autoReport.directory", dir}};
  o.logDir = dir;
  o.dotChecks = {"Fwd0"};
  auto s = makeMlpSession(m, o, ConstSGD(0.1f));
  trainMlpSteps(*s, m, 1, 0, 1, 1, 1);
  planted.expectUntouched();
  EXPECT_EQ(json::parse(readFileBytes(dir + "/report.json"))["execution"]["runs"], 1);
  EXPECT_CONTAINS(readFileBytes(dir + "/summary.txt"), "execution profile: 1 run(s)");
  EXPECT_NO_THROW(json::parse(readFileBytes(dir + "/serialized_graph.json")));
  EXPECT_CONTAINS(readFileBytes(dir + "/Fwd0.dot"), "digraph");
  EXPECT_FALSE(std::filesystem::is_symlink(dir + "/memory-report.txt"));
  std::set<std::string> expected;
  for (const auto& p : planted.names()) {
    if (p != "victim") expected.insert(p);
  }
  expected.insert(
      {"report.json", "summary.txt", "serialized_graph.json", "memory-report.txt", "Fwd0.dot"});
  EXPECT_EQ(namesIn(dir), expected);
}

TEST_F(AutoReport, BadKeysValuesAndDirectoriesAreRefusedAtCreation) {
  const MlpModel m = buildMlpModel();
  auto make = [&](std::map<std::string, std::string> engine,
                  std::map<std::string, std::string> report = {}) {
    SessionOptions o;
    o.engineOptions = std::move(engine);
    o.reportOptions = std::move(report);
    auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
    TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(0.1f), device, {},
                                         o);
  };
  expectError(
      [&] {
        make({{"autoReport.everything", "true"}});
      },
      {"unknown key", "autoReport.everything", "autoReport.all"});
  expectError(
      [&] {
        make({{"autoReport.outputArchive", "true"}});
      },
      {"autoReport.outputArchive", "does not support"});
  expectError(
      [&] {
        make({{"autoReport.all", "yes"}});
      },
      {"autoReport.all", "\"yes\"", "expected \"true\" or \"false\""});
  expectError(
      [&] {
        make({{"autoReport.all", "true"}, {"autoReport.directory", ""}});
      },
      {"autoReport.directory", "empty"});
  writeFileBytes(path("file"), "not a directory");
  expectError(
      [&] {
        make({{"autoReport.all", "true"}, {"autoReport.directory", path("file/sub")}});
      },
      {"autoReport.directory", "file/sub", "cannot create"});
  expectError(
      [&] {
        make({}, {{"showEverything", "true"}});
      },
      {"reportOptions", "showEverything", "showExecutionSteps, showVarStorage"});
  expectError(
      [&] {
        make({}, {{"showVarStorage", "1"}});
      },
      {"reportOptions", "showVarStorage", "expected \"true\" or \"false\""});
  // Poplar's compilation and instrumentation keys are accepted with no effect; their values are
  // still checked.
  EXPECT_NO_THROW(make({{"debug.retainDebugInformation", "true"},
                        {"opt.enableInlining", "false"},
                        {"target.deterministicWorkers", "portable"},
                        {"debug.instrumentCompute", "true"}}));
  expectError(
      [&] {
        make({{"debug.retainDebugInformation", "yes"}});
      },
      {"debug.retainDebugInformation", "\"yes\"", "expected \"true\" or \"false\""});
  expectError(
      [&] {
        make({{"target.deterministicWorkers", "always"}});
      },
      {"target.deterministicWorkers", "\"portable\""});
  // Turned off: no directory is needed or made.
  EXPECT_NO_THROW(make({{"autoReport.all", "false"}, {"autoReport.directory", path("none")}}));
  EXPECT_FALSE(std::filesystem::exists(path("none")));
}

TEST(Report, ReportOptionsShowEveryOpAndEveryTensor) {
  const MlpModel m = buildMlpModel();
  SessionOptions o;
  auto s = makeMlpSession(m, o, ConstSGD(0.1f));
  SessionOptions detailed;
  detailed.reportOptions = {{"showExecutionSteps", "true"}, {"showVarStorage", "true"}};
  auto d = makeMlpSession(m, detailed, ConstSGD(0.1f));
  trainMlpSteps(*s, m, 1, 0, 1, 0, 1);
  trainMlpSteps(*d, m, 1, 0, 1, 0, 1);
  const auto lines = [](const std::string& text) {
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  };
  const std::string plainText = s->getSummaryReport();
  const std::string detailedText = d->getSummaryReport();
  EXPECT_CONTAINS(detailedText, "every op (showExecutionSteps)");
  const size_t ops = reportOf(*d)["execution"]["ops"].size();
  const auto section = [](const std::string& text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    return at == std::string::npos ? std::string() : text.substr(at, text.find(to, at) - at);
  };
  EXPECT_EQ(lines(section(detailedText, "every op (showExecutionSteps)", "collectives")), ops + 1);
  // Every tensor on the IPU instead of the five largest.
  const size_t plainMemory = lines(section(plainText, "Largest tensors", "run: "));
  const size_t detailedMemory = lines(section(detailedText, "Largest tensors", "run: "));
  EXPECT_EQ(plainMemory, 6u) << plainText;
  EXPECT_GT(detailedMemory, plainMemory) << detailedText;
}

}  // namespace
}  // namespace xtrain::testing
