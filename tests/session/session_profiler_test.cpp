// SessionProfiler before prepareDevice: what the reports say without programs, the calls that need
// them refused, and the times it keeps until a reset.
#include "session/session_profiler.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain::session {
namespace {

SessionFigures figures() {
  SessionFigures f;
  f.training = true;
  f.ops = 3;
  f.tensors = 7;
  f.localReplicas = 2;
  f.globalReplicas = 4;
  f.accumulationFactor = 5;
  f.batchesPerStep = 6;
  f.stepsRun = 1;
  return f;
}

std::string messageOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const xtrain::error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SessionProfiler, BeforePrepareDeviceTheSummaryHasTheSessionOnly) {
  const SessionProfiler profiler(SessionOptions{}, EngineSettings{});
  EXPECT_EQ(profiler.summaryReport(figures()),
            "xtrain training session: 3 ops, 7 tensors; 2 local replica(s), accumulation factor "
            "5, 6 batch(es) per step; 1 step(s) run\n"
            "memory: not computed yet (call prepareDevice())\n");
  EXPECT_EQ(profiler.stepTimeReport(figures()), "");
}

TEST(SessionProfiler, CallsThatNeedTheProgramsAskForPrepareDevice) {
  const SessionProfiler profiler(SessionOptions{}, EngineSettings{});
  EXPECT_EQ(messageOf([&] { profiler.reportJson(figures()); }),
            "getReport: call prepareDevice() first");
  EXPECT_EQ(messageOf([&] { profiler.serializedGraph(); }),
            "getSerializedGraph: call prepareDevice() first");
  SessionOptions counted;
  counted.instrumentWithHardwareCycleCounter = true;
  const SessionProfiler withCounter(counted, EngineSettings{});
  EXPECT_EQ(messageOf([&] { withCounter.cycleCount(""); }),
            "getCycleCount: call prepareDevice() first");
}

TEST(SessionProfiler, CycleCountNeedsTheCounterThenARun) {
  // PopART's order: the option, then a run to count; the id is checked last (test_reports.py
  // checks the ids of a session that ran).
  const SessionProfiler profiler(SessionOptions{}, EngineSettings{});
  EXPECT_NE(messageOf([&] {
              profiler.cycleCount("inner_ipu_0");
            }).find("SessionOption 'instrumentWithHardwareCycleCounter' must be set to true"),
            std::string::npos);
  SessionOptions counted;
  counted.instrumentWithHardwareCycleCounter = true;
  const SessionProfiler withCounter(counted, EngineSettings{});
  EXPECT_EQ(messageOf([&] { withCounter.cycleCount("fwd"); }),
            "getCycleCount: call prepareDevice() first");
}

TEST(SessionProfiler, ARunCountsItsTimesUntilTheReset) {
  SessionProfiler profiler(SessionOptions{}, EngineSettings{});
  profiler.startRun();
  profiler.countReduction(0.25, {});
  profiler.countRun(1.0, figures());
  profiler.countRun(0.5, figures());
  EXPECT_EQ(profiler.runSeconds(), 1.5);
  EXPECT_EQ(profiler.reductionSeconds(), 0.25);
  EXPECT_EQ(profiler.profile().runs, 2u);
  EXPECT_EQ(profiler.profile().microBatches, 2u * 6u * 5u);
  profiler.resetProfile();
  EXPECT_EQ(profiler.runSeconds(), 0.0);
  EXPECT_EQ(profiler.reductionSeconds(), 0.0);
  EXPECT_EQ(profiler.profile().runs, 0u);
}

}  // namespace
}  // namespace xtrain::session
