// engineOptions "trace.file" / "trace.steps" (docs/trace.md): a C++ program's session records the
// timeline and writes it when the session is destroyed; bad values are errors at creation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/dist.hpp"

namespace xtrain::testing {
namespace {

using nlohmann::json;

const ConstSGD kSgd(0.1f, 0.0f, 0.9f);

SessionOptions withTrace(std::map<std::string, std::string> engineOptions) {
  SessionOptions o;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = 2;
  o.engineOptions = std::move(engineOptions);
  return o;
}

using SessionTrace = ScratchDirTest;

TEST_F(SessionTrace, TraceFileAndStepsRecordTheChosenRuns) {
  const MlpModel m = buildMlpModel();
  const std::string file = path("session.json");
  {
    auto s = makeMlpSession(m, withTrace({{"trace.file", file}, {"trace.steps", "2:3"}}), kSgd);
    trainMlpSteps(*s, m, 2, 0, 1, 0, 4);
    EXPECT_FALSE(std::filesystem::exists(file)) << "written before the session ended";
  }
  std::ifstream in(file);
  ASSERT_TRUE(in.good()) << "no trace at " << file;
  const json trace = json::parse(in);
  std::vector<int> steps;
  std::map<int, int> opsPerTrack;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.at("cat") == "step") steps.push_back(e.at("args").at("step"));
    if (e.at("cat") == "op") ++opsPerTrack[e.at("tid")];
  }
  EXPECT_EQ(steps, (std::vector<int>{2, 3}));
  ASSERT_EQ(opsPerTrack.size(), 2u);  // replicas 0 and 1: tids 1 and 2
  EXPECT_EQ(opsPerTrack.begin()->first, 1);
  EXPECT_EQ(opsPerTrack.begin()->second, opsPerTrack.rbegin()->second);
}

TEST_F(SessionTrace, BadTraceOptionsAreErrorsAtCreation) {
  const MlpModel m = buildMlpModel();
  expectError(
      [&] {
        makeMlpSession(m, withTrace({{"trace.file", path("missing/t.json")}}), kSgd);
      },
      {"engineOptions[\"trace.file\"]", "missing/t.json"});
  expectError(
      [&] {
        makeMlpSession(m, withTrace({{"trace.file", path("t.json")}, {"trace.steps", "3:1"}}),
                       kSgd);
      },
      {"engineOptions[\"trace.steps\"]", "3:1"});
  expectError(
      [&] {
        makeMlpSession(m, withTrace({{"trace.steps", "1:2"}}), kSgd);
      },
      {"trace.steps", "needs \"trace.file\""});
}

// A NUL byte in a text option would cut a path where the C library reads it ("t\0.json" wrote
// "t"): refused at creation, naming the option and showing the NUL; nothing is written.
TEST_F(SessionTrace, ANulByteInATextOptionIsRefusedNamingTheOption) {
  const MlpModel m = buildMlpModel();
  const std::string cut = path("t");
  const std::string withNul = cut + std::string("\0.json", 6);
  expectError(
      [&] {
        makeMlpSession(m, withTrace({{"trace.file", withNul}}), kSgd);
      },
      {"engineOptions[\"trace.file\"]", "t\\0.json", "NUL byte"});
  expectError(
      [&] {
        makeMlpSession(
            m, withTrace({{"autoReport.all", "true"}, {"autoReport.directory", withNul}}), kSgd);
      },
      {"engineOptions[\"autoReport.directory\"]", "NUL byte"});
  expectError(
      [&] {
        makeMlpSession(m, withTrace({{std::string("trace.file\0x", 12), path("t.json")}}), kSgd);
      },
      {"engineOptions", "key \"trace.file\\0x\"", "NUL byte"});
  SessionOptions o = withTrace({});
  o.reportOptions = {{"showVarStorage", std::string("true\0", 5)}};
  expectError([&] { makeMlpSession(m, o, kSgd); }, {"reportOptions[\"showVarStorage\"]", "NUL"});
  o = withTrace({});
  o.logDir = withNul;
  expectError([&] { makeMlpSession(m, o, kSgd); }, {"SessionOptions::logDir", "NUL byte"});
  EXPECT_FALSE(std::filesystem::exists(cut));
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

// An instance of SessionTrace.XrunMergesTheInstancesParts (started by xrun): trains 3 steps with
// engineOptions "trace.file" = <XTRAIN_TEST_OUT>/job.json.
TEST(SessionTraceWorker, TrainsWithATraceFile) {
  const char* out = std::getenv("XTRAIN_TEST_OUT");
  if (std::getenv("XTRAIN_NUM_INSTANCES") == nullptr || out == nullptr) {
    GTEST_SKIP() << "an instance of SessionTrace.XrunMergesTheInstancesParts, started by xrun";
  }
  const MlpModel m = buildMlpModel();
  SessionOptions o;
  dist::configureSessionOptions(o);
  o.engineOptions = {{"trace.file", std::string(out) + "/job.json"}};
  auto s = makeMlpSession(m, o, kSgd);
  trainMlpSteps(*s, m, o.getGlobalReplicationFactor(), dist::getReplicaIndexOffset(), 1, 0, 3);
}

// A C++ program's distributed sessions under xrun: each writes its part, xrun merges them.
TEST_F(SessionTrace, XrunMergesTheInstancesParts) {
  const CommandResult r =
      runTestsUnderXrun("-n 2 --num-replicas 4", "test_session", "SessionTraceWorker.*",
                        "XTRAIN_TEST_OUT=" + dir_.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::ifstream in(path("job.json"));
  ASSERT_TRUE(in.good()) << r.output;
  const json trace = json::parse(in);
  std::map<int, std::vector<int>> steps;
  std::map<int, std::set<int>> opTracks;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.at("cat") == "step") steps[e.at("pid")].push_back(e.at("args").at("step"));
    if (e.at("cat") == "op") opTracks[e.at("pid")].insert(e.at("tid").get<int>());
  }
  EXPECT_EQ(steps, (std::map<int, std::vector<int>>{{1, {1, 2, 3}}, {2, {1, 2, 3}}}));
  EXPECT_EQ(opTracks, (std::map<int, std::set<int>>{{1, {1, 2}}, {2, {3, 4}}}));
}

}  // namespace
}  // namespace xtrain::testing
