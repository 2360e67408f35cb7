// `xtrain --trace` (docs/trace.md) as users run it: alone and under `xrun -n 2`, with
// --trace-steps, with a small ring, interrupted by SIGINT, failing, and with bad paths and steps.
// Every trace is parsed strictly (nlohmann::json) and checked for what Perfetto shows: Chrome
// trace events (ph X with ts/dur, ph M naming processes and threads). Every wait is bounded.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "testing/planted_files.hpp"
#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string bin(const std::string& program) {
  return std::string(XTRAIN_BIN_DIR) + "/" + program;
}

json readTrace(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no trace at " << path;
  if (!in.good()) return json::object({{"traceEvents", json::array()}});
  return json::parse(in);  // throws (failing the test) on anything that is not JSON
}

std::vector<json> complete(const json& trace, const std::string& category = "") {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && (category.empty() || e.at("cat") == category)) out.push_back(e);
  }
  return out;
}

// pid -> tid -> thread name; pid -> process name.
struct Names {
  std::map<int, std::map<int, std::string>> threads;
  std::map<int, std::string> processes;
};
Names namesOf(const json& trace) {
  Names n;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    if (e.at("name") == "thread_name")
      n.threads[e.at("pid")][e.at("tid")] = e.at("args").at("name");
    if (e.at("name") == "process_name") n.processes[e.at("pid")] = e.at("args").at("name");
  }
  return n;
}

// pid -> the step numbers traced.
std::map<int, std::vector<int>> stepsOf(const json& trace) {
  std::map<int, std::vector<int>> steps;
  for (const auto& e : complete(trace, "step"))
    steps[e.at("pid")].push_back(e.at("args").at("step"));
  return steps;
}

ProcessResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  Child job(argv, env);
  ProcessResult r = job.wait(240);
  EXPECT_FALSE(r.timedOut);
  return r;
}

using Trace = ScratchDirTest;

// The whole job in one file: both instances (pid 1, 2) with their replicas' tracks, ops,
// collectives with bytes and communicator, gradient buckets, data loading and steps.
TEST_F(Trace, XrunMergesBothInstancesIntoOneFile) {
  const std::string file = path("job.json");
  const ProcessResult r = run({bin("xrun"), "-n", "2", "--num-replicas", "4", bin("xtrain"),
                               "--steps", "3", "--trace", file});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("xrun: wrote the job's trace " + file + " (2 instance(s))"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(file + ".instance-0"));  // merged, then removed
  const json trace = readTrace(file);
  const Names names = namesOf(trace);
  ASSERT_EQ(names.processes.size(), 2u);
  EXPECT_EQ(names.processes.at(1).rfind("instance 0 (host ", 0), 0u) << names.processes.at(1);
  EXPECT_EQ(names.processes.at(2).rfind("instance 1 (host ", 0), 0u) << names.processes.at(2);
  EXPECT_EQ(names.threads.at(1).at(1), "replica 0");
  EXPECT_EQ(names.threads.at(1).at(2), "replica 1");
  EXPECT_EQ(names.threads.at(2).at(3), "replica 2");
  EXPECT_EQ(names.threads.at(2).at(4), "replica 3");

  std::map<int, std::set<int>> opTracks;  // pid -> tids with ops
  for (const auto& e : complete(trace, "op")) opTracks[e.at("pid")].insert(e.at("tid").get<int>());
  EXPECT_EQ(opTracks, (std::map<int, std::set<int>>{{1, {1, 2}}, {2, {3, 4}}}));

  int gradientCollectives = 0;
  for (const auto& e : complete(trace, "collective")) {
    EXPECT_TRUE(e.at("args").at("communicator").is_string()) << e;
    EXPECT_EQ(e.at("args").at("ranks"), 2) << e;
    if (e.at("name").get<std::string>().find("gradient") != std::string::npos) {
      EXPECT_GT(e.at("args").at("bytes").get<int64_t>(), 0) << e;
      ++gradientCollectives;
    }
  }
  EXPECT_GE(gradientCollectives, 6);  // at least a bucket a step on each instance
  EXPECT_FALSE(complete(trace, "bucket").empty());
  EXPECT_EQ(complete(trace, "data").size(), 6u);  // a batch a step on each instance
  EXPECT_EQ(stepsOf(trace), (std::map<int, std::vector<int>>{{1, {1, 2, 3}}, {2, {1, 2, 3}}}));
  for (const auto& e : complete(trace)) {
    EXPECT_TRUE(e.at("ts").is_number() && e.at("dur").is_number()) << e;
  }
  // One clock: the instances' first steps meet in the same collectives, so they overlap.
  std::map<int, json> firstStep;
  for (const auto& e : complete(trace, "step")) {
    if (e.at("args").at("step") == 1) firstStep[e.at("pid")] = e;
  }
  const double start1 = firstStep.at(1).at("ts"),
               end1 = start1 + firstStep.at(1).at("dur").get<double>();
  const double start2 = firstStep.at(2).at("ts"),
               end2 = start2 + firstStep.at(2).at("dur").get<double>();
  EXPECT_LT(std::max(start1, start2), std::min(end1, end2)) << "the first steps do not overlap";
}

// --trace-steps 2:3 of 5: only those steps, and the ops inside them.
TEST_F(Trace, TraceStepsLimitsTheSteps) {
  const std::string file = path("steps.json");
  const ProcessResult r = run({bin("xrun"), "-n", "2", bin("xtrain"), "--steps", "5", "--trace",
                               file, "--trace-steps", "2:3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json trace = readTrace(file);
  EXPECT_EQ(stepsOf(trace), (std::map<int, std::vector<int>>{{1, {2, 3}}, {2, {2, 3}}}));
  std::map<int, std::pair<double, double>> window;  // pid -> [start of step 2, end of step 3]
  for (const auto& e : complete(trace, "step")) {
    const double ts = e.at("ts"), end = ts + e.at("dur").get<double>();
    auto [it, fresh] = window.emplace(e.at("pid").get<int>(), std::make_pair(ts, end));
    if (!fresh) it->second = {std::min(it->second.first, ts), std::max(it->second.second, end)};
  }
  const auto ops = complete(trace, "op");
  EXPECT_FALSE(ops.empty());
  for (const auto& e : ops) {
    const auto& w = window.at(e.at("pid"));
    EXPECT_GE(e.at("ts").get<double>(), w.first) << e;
    EXPECT_LE(e.at("ts").get<double>(), w.second) << e;
  }
}

// A long run with a ring of 300 events: the file keeps the newest 300 and says how many went.
TEST_F(Trace, TheRingBoundsTheFile) {
  const std::string file = path("ring.json");
  const ProcessResult r =
      run({bin("xtrain"), "--steps", "200", "--trace", file}, {"XTRAIN_TRACE_EVENTS=300"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json trace = readTrace(file);
  EXPECT_EQ(complete(trace).size(), 300u);
  EXPECT_GT(trace.at("otherData").at("droppedEvents").get<int64_t>(), 0);
  const auto steps = stepsOf(trace).at(1);
  EXPECT_EQ(steps.back(), 200);  // the newest kept
  EXPECT_LT(fs::file_size(file), 300u * 400u);
}

// Ctrl-C after the first step: the file is there and valid, alone and merged by xrun. FILE.tmp
// planted beside each file the run writes, as a link to a victim file (another user's trap in a
// shared directory, issue 27), is neither written through nor used.
TEST_F(Trace, AnInterruptedRunLeavesValidJson) {
  const std::vector<std::string> training = {"--steps", "3000", "--micro-batch-size", "1024"};
  for (const bool underXrun : {false, true}) {
    SCOPED_TRACE(underXrun ? "xrun -n 2" : "xtrain alone");
    const std::string file = path(underXrun ? "xrun.json" : "alone.json");
    PlantedTemporaries planted(file + ".victim");
    planted.plantBeside(file, PlantKind::SymlinkToVictim);
    if (underXrun) {
      planted.plantBeside({file + ".instance-0", file + ".instance-1"}, PlantKind::SymlinkToVictim);
    }
    std::vector<std::string> argv;
    if (underXrun) argv = {bin("xrun"), "-n", "2"};
    argv.push_back(bin("xtrain"));
    argv.insert(argv.end(), training.begin(), training.end());
    argv.insert(argv.end(), {"--trace", file});
    Child job(argv);
    ASSERT_TRUE(job.waitForStdout(
        [](const std::string& out) { return out.find("step      1/3000") != std::string::npos; },
        120))
        << "the job did not print its first step";
    ::kill(job.pid(), SIGINT);
    const ProcessResult r = job.wait(120);
    ASSERT_FALSE(r.timedOut);
    EXPECT_NE(r.exitCode, 0) << "the run was not interrupted (it should take far longer)";
    const json trace = readTrace(file);
    // Every instance's part, with its ops; the steps completed before the signal (a step in
    // progress has no complete event, and instance 1 may not have finished its first yet).
    std::set<int> withOps;
    for (const auto& e : complete(trace, "op")) withOps.insert(e.at("pid").get<int>());
    const std::set<int> expected = underXrun ? std::set<int>{1, 2} : std::set<int>{1};
    EXPECT_EQ(withOps, expected) << r.err;
    const auto steps = stepsOf(trace);
    ASSERT_TRUE(steps.count(1)) << r.err;
    EXPECT_GE(steps.at(1).size(), 1u);
    EXPECT_LT(steps.at(1).size(), 3000u);
    planted.expectUntouched();
  }
}

// A run that fails (the loss diverges) still leaves its trace.
TEST_F(Trace, AFailedRunLeavesValidJson) {
  const std::string file = path("failed.json");
  const ProcessResult r = run({bin("xtrain"), "--steps", "50", "--lr", "1e30", "--trace", file});
  ASSERT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("the loss became"), std::string::npos) << r.err;
  const json trace = readTrace(file);
  EXPECT_FALSE(stepsOf(trace).empty());
}

// Bad paths and steps: exit 2 before training, naming the flag.
TEST_F(Trace, BadPathsAndStepsAreUsageErrors) {
  const std::string readOnly = path("ro");
  fs::create_directories(readOnly);
  fs::permissions(readOnly, fs::perms::owner_read | fs::perms::owner_exec);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--trace", path("missing/t.json")}, "--trace"},
      {{"--trace", dir_.string()}, "directory"},
      {{"--trace", path("t.json"), "--trace-steps", "0:3"}, "steps count from 1"},
      {{"--trace", path("t.json"), "--trace-steps", "4:2"}, "after the last"},
      {{"--trace", path("t.json"), "--trace-steps", "3"}, "expected A:B"},
      {{"--trace-steps", "1:2"}, "--trace-steps needs --trace"},
  };
  if (::geteuid() != 0) cases.push_back({{"--trace", readOnly + "/t.json"}, "--trace"});
  for (const auto& c : cases) {
    std::vector<std::string> argv = {bin("xtrain"), "--steps", "2"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const ProcessResult r = run(argv);
    EXPECT_EQ(r.exitCode, 2) << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("step "), std::string::npos) << "trained before refusing: " << r.out;
  }
  fs::permissions(readOnly, fs::perms::owner_all);
  EXPECT_FALSE(fs::exists(path("t.json")));
}

// An output that names an input or another output would replace it without a word (a trained
// model overwritten by the trace, a data set by the metrics): refused before training, exit 2, the
// file untouched. Also through a symbolic link and a "./" spelling.
TEST_F(Trace, OutputsThatNameAnotherFileAreRefused) {
  const std::string model = path("model.onnx");
  const std::string data = path("data.h5");
  for (const auto& f : {model, data}) std::ofstream(f) << "keep me";
  fs::create_symlink(model, path("link.onnx"));
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--trace", model, "--save-model", model}, "--save-model " + model + " is the same file"},
      {{"--trace", path("link.onnx"), "--save-model", model}, "is the same file as --trace"},
      {{"--metrics", data, "--val-data", data},
       "--metrics " + data + " is the same file as --val-data"},
      {{"--trace", path("x.json"), "--metrics", dir_.string() + "/./x.json"}, "--trace"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {bin("xtrain"), "--steps", "2"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const ProcessResult r = run(argv);
    EXPECT_EQ(r.exitCode, 2) << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("step "), std::string::npos) << "trained before refusing: " << r.out;
  }
  for (const auto& f : {model, data}) {
    std::ifstream in(f);
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "keep me") << f;
  }
}

// scripts/plot-trace draws a real trace to a PNG (skipped without Debian's python3-matplotlib).
TEST_F(Trace, PlotTraceDrawsAPng) {
  if (runCommand("/usr/bin/python3 -c 'import matplotlib'").exitCode != 0) {
    GTEST_SKIP() << "no python3-matplotlib";
  }
  const std::string file = path("plot.json");
  ASSERT_EQ(run({bin("xtrain"), "--steps", "3", "--trace", file}).exitCode, 0);
  const std::string png = path("plot.png");
  const std::string script = std::string(XTRAIN_SOURCE_DIR) + "/scripts/plot-trace";
  const CommandResult r = runCommand(script + " " + file + " " + png + " --steps 2:3");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  EXPECT_EQ(runCommand(script + " " + file + " " + png + " --steps 7:9").exitCode, 2);
}

// A resumed run numbers its steps as its progress lines do: on from the checkpoint's step. Its
// asynchronous checkpoint saves are on the main track and the checkpoint writer's.
TEST_F(Trace, AResumedRunCountsOnFromTheCheckpoint) {
  const std::string checkpoints = path("ckpt");
  ASSERT_EQ(run({bin("xtrain"), "--steps", "4", "--checkpoint-dir", checkpoints}).exitCode, 0);
  const std::string file = path("resumed.json");
  const ProcessResult r = run({bin("xtrain"), "--steps", "7", "--checkpoint-dir", checkpoints,
                               "--resume", "auto", "--checkpoint-every", "1", "--checkpoint-async",
                               "--trace", file, "--trace-steps", "6:7"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json trace = readTrace(file);
  EXPECT_EQ(stepsOf(trace), (std::map<int, std::vector<int>>{{1, {6, 7}}}));
  std::map<std::string, std::set<int>> checkpointTracks;  // event name -> tids
  for (const auto& e : complete(trace, "checkpoint")) {
    checkpointTracks[e.at("name")].insert(e.at("tid").get<int>());
    EXPECT_NE(e.at("args").at("path").get<std::string>().find("ckpt"), std::string::npos) << e;
  }
  EXPECT_EQ(checkpointTracks["save checkpoint"], std::set<int>{1000});
  EXPECT_EQ(checkpointTracks["write checkpoint"], std::set<int>{1999});
  EXPECT_EQ(namesOf(trace).threads.at(1).at(1999), "checkpoint writer");
}

}  // namespace
}  // namespace xtrain::testing
