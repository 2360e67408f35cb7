// The timeline (src/common/timeline*.hpp): what a Span records, the ring's bound, the steps window,
// the JSON it writes (parsed back with nlohmann::json, strictly) and xrun's merge of the parts.
#include "common/timeline.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "common/json_writer.hpp"
#include "common/timeline_merge.hpp"
#include "testing/error_testing.hpp"
#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "timeline_testing.hpp"
#include "xtrain/error.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json readJson(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);  // throws on anything that is not JSON
}

std::vector<json> eventsOf(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

class Timeline : public TimelineTest {
 protected:
  Timeline() : TimelineTest(2) {}
};

TEST_F(Timeline, RecordsNothingWhenNotStarted) {
  EXPECT_FALSE(timeline::recording());
  {
    timeline::Span span(timeline::Category::Op, "op");
    EXPECT_FALSE(span.active());
  }
  EXPECT_EQ(timeline::stats().recorded, 0u);
}

TEST_F(Timeline, WritesChromeTraceEventsWithArgsAndNames) {
  timeline::start(config());
  {
    timeline::Span span(timeline::Category::Collective, "allReduce \"x\"\\ \x01 caf\xc3\xa9 \xff");
    span.arg("bytes", 4096).arg("ranks", 2).text("communicator", "world");
  }
  {
    const timeline::TrackScope track(timeline::replicaTrack(3), "replica 3");
    const timeline::Span op(timeline::Category::Op, "MatMul 'fc1'");
  }
  timeline::write();
  const json trace = readJson(dir_ / "trace.json");
  const auto complete = eventsOf(trace, "X");
  ASSERT_EQ(complete.size(), 2u);
  const json& c = complete[0];
  EXPECT_EQ(c.at("name"), "allReduce \"x\"\\ \x01 caf\xc3\xa9 ?");
  EXPECT_EQ(c.at("cat"), "collective");
  EXPECT_EQ(c.at("pid"), 3);  // instance 2
  EXPECT_EQ(c.at("tid"), timeline::kMainTrack);
  EXPECT_EQ(c.at("args").at("bytes"), 4096);
  EXPECT_EQ(c.at("args").at("ranks"), 2);
  EXPECT_EQ(c.at("args").at("communicator"), "world");
  EXPECT_TRUE(c.at("ts").is_number());
  EXPECT_GE(c.at("dur").get<double>(), 0.0);
  EXPECT_EQ(complete[1].at("tid"), 4);  // replica 3
  EXPECT_EQ(complete[1].at("cat"), "op");
  std::map<std::string, json> names;  // "<name>/<tid>" -> args
  for (const auto& m : eventsOf(trace, "M")) {
    names[m.at("name").get<std::string>() + "/" + std::to_string(m.at("tid").get<int>())] =
        m.at("args");
  }
  EXPECT_EQ(names.at("process_name/0").at("name"), "instance 2 (host test)");
  EXPECT_EQ(names.at("thread_name/4").at("name"), "replica 3");
  EXPECT_EQ(names.at("thread_name/1000").at("name"), "host: main");
  EXPECT_EQ(trace.at("otherData").at("droppedEvents"), 0);
}

TEST_F(Timeline, LongNamesKeepTheirStartAndLongTextsTheirEnd) {
  timeline::start(config());
  const std::string name(100, 'n');
  const std::string path = "/a/very/long/directory/name/that/goes/on/and/on/ckpt-000123";
  { timeline::Span(timeline::Category::Checkpoint, name + "x").text("path", path); }
  timeline::write();
  const json e = eventsOf(readJson(dir_ / "trace.json"), "X").at(0);
  EXPECT_EQ(e.at("name"), name.substr(0, 63));
  EXPECT_EQ(e.at("args").at("path"), "..." + path.substr(path.size() - 44));
}

TEST_F(Timeline, TheRingKeepsTheNewestEventsAndCountsTheDropped) {
  timeline::start(config(16));
  for (int i = 0; i < 100; ++i) {
    timeline::Span span(timeline::Category::Host, "event " + std::to_string(i));
  }
  EXPECT_EQ(timeline::stats().dropped, 84u);
  timeline::write();
  const json trace = readJson(dir_ / "trace.json");
  const auto complete = eventsOf(trace, "X");
  ASSERT_EQ(complete.size(), 16u);
  EXPECT_EQ(complete.front().at("name"), "event 84");
  EXPECT_EQ(complete.back().at("name"), "event 99");
  EXPECT_EQ(trace.at("otherData").at("droppedEvents"), 84);
  bool labelled = false;
  for (const auto& m : eventsOf(trace, "M")) {
    if (m.at("name") == "process_labels") {
      labelled = m.at("args").at("labels") == "ring of 16 events, 84 oldest dropped";
    }
  }
  EXPECT_TRUE(labelled);
}

TEST_F(Timeline, RecordsOnlyTheStepsOfTheWindow) {
  timeline::Config c = config();
  c.steps = std::make_pair(int64_t{2}, int64_t{3});
  timeline::start(c);
  { timeline::Span before(timeline::Category::Host, "compile"); }
  for (int i = 0; i < 5; ++i) {
    const timeline::StepSpan step;
    EXPECT_EQ(step.step(), i + 1);
    timeline::Span op(timeline::Category::Op, "op");
  }
  // A caller numbering its own steps (a resumed run).
  timeline::enterStep(3);
  { const timeline::StepSpan step; }
  // Another run in the same step (xtrain's validation) is not a step of its own.
  { const timeline::StepSpan validation; }
  timeline::write();
  std::multiset<std::string> names;
  for (const auto& e : eventsOf(readJson(dir_ / "trace.json"), "X")) {
    names.insert(e.at("name").get<std::string>());
  }
  EXPECT_EQ(names, (std::multiset<std::string>{"step 2", "op", "step 3", "op", "step 3",
                                               "run in step 3"}));
}

TEST_F(Timeline, SpansFromManyThreadsAllArrive) {
  timeline::start(config(4096));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      const timeline::TrackScope track(timeline::replicaTrack(t), "replica " + std::to_string(t));
      for (int i = 0; i < 200; ++i) timeline::Span span(timeline::Category::Op, "op");
    });
  }
  for (auto& th : threads) th.join();
  timeline::write();
  std::map<int, int> perTrack;
  for (const auto& e : eventsOf(readJson(dir_ / "trace.json"), "X")) ++perTrack[e.at("tid")];
  EXPECT_EQ(perTrack, (std::map<int, int>{{1, 200}, {2, 200}, {3, 200}, {4, 200}}));
}

TEST_F(Timeline, OneTracePerProcessAndBadConfigsAreRefused) {
  timeline::start(config());
  expectError([&] { timeline::start(config()); }, {"already being recorded"});
  timeline::stop();
  timeline::Config tiny = config(4);
  expectError([&] { timeline::start(tiny); }, {"16 .."});
}

TEST_F(Timeline, WritingToAMissingDirectoryIsARuntimeError) {
  timeline::Config c = config();
  c.path = (dir_ / "missing" / "trace.json").string();
  timeline::start(c);
  expectError([] { timeline::write(); }, {"missing/trace.json"});
}

// A thread names its track once (a communicator's executor lives across traces): a second trace
// of the process still shows the name.
TEST_F(Timeline, ATracksNameSurvivesIntoTheNextTrace) {
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;  // 1: name and record in trace 1; 2: record in trace 2; 3: done
  std::thread worker([&] {
    for (int want : {1, 2}) {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return phase == want; }));
      timeline::nameThisThreadOnce("comm executor");
      { timeline::Span span(timeline::Category::Collective, "allReduce"); }
      phase = want == 1 ? 10 : 3;
      cv.notify_all();
    }
  });
  auto runPhase = [&](int want, int done) {
    std::unique_lock lock(mu);
    phase = want;
    cv.notify_all();
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return phase == done; }));
  };
  timeline::start(config());
  runPhase(1, 10);
  timeline::write();
  timeline::stop();
  timeline::start(config());
  runPhase(2, 3);
  timeline::write();
  worker.join();
  const json trace = readJson(dir_ / "trace.json");
  int tid = -1;
  for (const auto& e : eventsOf(trace, "X")) {
    if (e.at("name") == "allReduce") tid = e.at("tid");
  }
  ASSERT_NE(tid, -1) << trace.dump();
  bool named = false;
  for (const auto& e : eventsOf(trace, "M")) {
    named = named || (e.at("name") == "thread_name" && e.at("tid") == tid &&
                      e.at("args").at("name") == "comm executor");
  }
  EXPECT_TRUE(named) << trace.dump();
}

TEST(TimelineSteps, ParsesAColonBAndRefusesTheRest) {
  EXPECT_EQ(timeline::parseStepRange("2:5", "--trace-steps"),
            std::make_pair(int64_t{2}, int64_t{5}));
  EXPECT_EQ(timeline::parseStepRange("7:7", "--trace-steps"),
            std::make_pair(int64_t{7}, int64_t{7}));
  for (const std::string bad : {"", "3", "a:b", "1:", ":4", "-1:3", "1:2:3", " 1:2"}) {
    expectError([&] { timeline::parseStepRange(bad, "--trace-steps"); }, {"expected A:B"});
  }
  expectError([] { timeline::parseStepRange("0:3", "--trace-steps"); }, {"steps count from 1"});
  expectError([] { timeline::parseStepRange("5:2", "--trace-steps"); },
              {"the first step 5 is after the last 2"});
}

TEST(TimelineCapacity, ComesFromTheEnvironmentWithinBounds) {
  {
    ScopedEnv unset("XTRAIN_TRACE_EVENTS", nullptr);
    EXPECT_EQ(timeline::capacityFromEnvironment(), timeline::kDefaultCapacity);
  }
  {
    ScopedEnv set("XTRAIN_TRACE_EVENTS", "500");
    EXPECT_EQ(timeline::capacityFromEnvironment(), 500u);
  }
  for (const char* bad : {"15", "-5", "1e6", "99999999999999999999999", "100000000", " 500", "500 ",
                          "+500", "0x100"}) {
    ScopedEnv set("XTRAIN_TRACE_EVENTS", bad);
    expectError(
        [] { timeline::capacityFromEnvironment(); },
        {std::string("XTRAIN_TRACE_EVENTS='") + bad + "': expected a whole number from 16"});
  }
}

TEST(TimelineJson, MicrosecondsAndIntegers) {
  char buffer[64];
  xtrain::json::Sink out(buffer, sizeof buffer);
  xtrain::json::writeMicros(out, 1234567);
  out.put(' ');
  xtrain::json::writeMicros(out, -5);
  out.put(' ');
  xtrain::json::writeInteger(out, INT64_MIN);
  EXPECT_STREQ(out.c_str(), "1234.567 -0.005 -9223372036854775808");
}

// Two parts whose clocks started 1.5 ms apart: one trace, instance 1's times 1500 us later.
TEST_F(Timeline, XrunMergesThePartsOnOneClock) {
  const std::string file = (dir_ / "job.json").string();
  auto writePart = [&](int instance, const std::string& name) {
    timeline::Config c = config();
    c.path = timeline::partPath(file, instance);
    c.instance = instance;
    c.processName = "instance " + std::to_string(instance);
    timeline::start(c);
    { timeline::Span span(timeline::Category::Step, name); }
    timeline::write();
    timeline::stop();
  };
  writePart(0, "zero");
  writePart(1, "one");
  // The parts' origins, as they were written, moved 1.5 ms apart.
  auto setOrigin = [&](int instance, const std::string& origin) {
    const std::string path = timeline::partPath(file, instance);
    std::ifstream in(path);
    std::stringstream all;
    all << in.rdbuf();
    std::string text = all.str();
    const std::string key = "\"xtrainOriginRealtimeNs\":";
    const auto at = text.find(key) + key.size();
    text.replace(at, text.find(',', at) - at, origin);
    std::ofstream(path, std::ios::trunc) << text;
  };
  setOrigin(0, "1700000000000000000");
  setOrigin(1, "1700000000001500000");
  const json p0 = readJson(timeline::partPath(file, 0));
  const json p1 = readJson(timeline::partPath(file, 1));
  const double ts0 = eventsOf(p0, "X").at(0).at("ts");
  const double ts1 = eventsOf(p1, "X").at(0).at("ts");

  timeline::registerPart(dir_.string(), 0, file);
  timeline::registerPart(dir_.string(), 1, file);
  timeline::registerPart(dir_.string(), 2, file);  // an instance that never wrote its part
  const auto outcomes = timeline::mergeRegisteredParts(dir_.string());
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].written);
  EXPECT_EQ(outcomes[0].merged, 2);
  ASSERT_EQ(outcomes[0].problems.size(), 1u);
  EXPECT_NE(outcomes[0].problems[0].find("instance 2: no part file"), std::string::npos);
  EXPECT_FALSE(fs::exists(timeline::partPath(file, 0)));

  const json merged = readJson(file);
  EXPECT_EQ(merged.at("otherData").at("xtrainOriginRealtimeNs"), 1700000000000000000);
  std::map<std::string, json> byName;
  for (const auto& e : eventsOf(merged, "X")) byName[e.at("name")] = e;
  EXPECT_EQ(byName.at("zero").at("pid"), 1);
  EXPECT_EQ(byName.at("one").at("pid"), 2);
  EXPECT_NEAR(byName.at("zero").at("ts").get<double>(), ts0, 1e-6);
  EXPECT_NEAR(byName.at("one").at("ts").get<double>(), ts1 + 1500.0, 1e-3);
  std::set<int> named;
  for (const auto& m : eventsOf(merged, "M")) {
    if (m.at("name") == "process_name") named.insert(m.at("pid").get<int>());
  }
  EXPECT_EQ(named, (std::set<int>{1, 2}));
}

TEST_F(Timeline, AMalformedPartIsReportedNotMerged) {
  const std::string file = (dir_ / "job.json").string();
  std::ofstream(timeline::partPath(file, 0)) << "{\"traceEvents\":[\n";
  const auto outcome = timeline::mergeParts(file, {{0, timeline::partPath(file, 0)}});
  EXPECT_FALSE(outcome.written);
  ASSERT_EQ(outcome.problems.size(), 1u);
  EXPECT_NE(outcome.problems[0].find("not a trace part"), std::string::npos);
  EXPECT_FALSE(fs::exists(file));
}

}  // namespace
}  // namespace xtrain::testing
