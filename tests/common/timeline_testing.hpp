// The fixture of the timeline tests: a scratch directory, a trace configuration in it, and the
// recording stopped after each test (the timeline is one per process).
#pragma once

#include <cstddef>
#include <string>

#include "common/timeline.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::testing {

class TimelineTest : public ScratchDirTest {
 protected:
  explicit TimelineTest(int instance = 0) : instance_(instance) {}
  void TearDown() override {
    timeline::stop();
    ScratchDirTest::TearDown();
  }
  // A trace of `capacity` events to trace.json in the scratch directory, as instance `instance_`.
  timeline::Config config(size_t capacity = 1024) const {
    timeline::Config c;
    c.path = path("trace.json");
    c.instance = instance_;
    c.processName = "instance " + std::to_string(instance_) + " (host test)";
    c.capacity = capacity;
    return c;
  }

 private:
  int instance_;
};

}  // namespace xtrain::testing
