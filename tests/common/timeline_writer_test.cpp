// How the timeline reaches its file and what it costs (issue 27): the trace never writes through
// what another user planted beside its path (FILE.tmp as a link to a victim, a file, a FIFO), from
// write() or from SIGINT's handler, and leaves no temporary behind; XTRAIN_TRACE_EVENTS at its
// maximum bounds the ring without allocating it up front.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/timeline.hpp"
#include "testing/planted_files.hpp"
#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "timeline_testing.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The names of the complete events of the trace at `path` (throws when it is not JSON).
std::vector<std::string> eventNames(const fs::path& path) {
  std::ifstream in(path);
  const json trace = json::parse(in);
  std::vector<std::string> names;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") names.push_back(e.at("name"));
  }
  return names;
}

class TimelineWriter : public TimelineTest, public ::testing::WithParamInterface<PlantKind> {};

TEST_P(TimelineWriter, NothingPlantedBesideThePathIsWrittenThrough) {
  PlantedTemporaries planted(path("victim"));
  planted.plantBeside(path("trace.json"), GetParam());
  timeline::start(config());
  { timeline::Span span(timeline::Category::Host, "the only event"); }
  timeline::write();
  EXPECT_EQ(eventNames(dir_ / "trace.json"), std::vector<std::string>{"the only event"});
  planted.expectUntouched();
  // No temporary is left behind: the directory holds the trace and what the test made.
  std::set<std::string> expected = planted.names();
  expected.insert("trace.json");
  EXPECT_EQ(namesIn(dir_), expected);
}

// SIGINT's handler writes the trace with async-signal-safe calls only; its temporary's name was
// drawn by start(), so it is as unforeseeable as write()'s. The child (a fork) dies by SIGINT, as
// Ctrl-C would end it, after writing.
TEST_P(TimelineWriter, SigintsHandlerWritesThroughNothingPlantedEither) {
  PlantedTemporaries planted(path("victim"));
  planted.plantBeside(path("trace.json"), GetParam());
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(
      {
        timeline::start(config());
        timeline::writeOnInterrupt();
        { timeline::Span span(timeline::Category::Host, "before the signal"); }
        ::raise(SIGINT);
        std::_Exit(3);  // not reached: the handler ends the process by the signal
      },
      ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EQ(eventNames(dir_ / "trace.json"), std::vector<std::string>{"before the signal"});
  planted.expectUntouched();
  std::set<std::string> expected = planted.names();
  expected.insert("trace.json");
  EXPECT_EQ(namesIn(dir_), expected);
}

INSTANTIATE_TEST_SUITE_P(Planted, TimelineWriter,
                         ::testing::Values(PlantKind::SymlinkToVictim, PlantKind::RegularFile,
                                           PlantKind::Fifo),
                         [](const auto& info) {
                           switch (info.param) {
                             case PlantKind::SymlinkToVictim: return std::string("Symlink");
                             case PlantKind::RegularFile: return std::string("File");
                             case PlantKind::Fifo: return std::string("Fifo");
                           }
                           return std::string("Unknown");
                         });

// The ring grows by chunks as it first fills; once full it wraps over all of them, oldest first,
// also when its size is not a whole number of chunks.
TEST_F(TimelineWriter, ARingOfSeveralChunksKeepsTheNewestEvents) {
  timeline::start(config(5000));  // one chunk of 4096 events and a part of one
  for (int i = 0; i < 12000; ++i) timeline::Span span(timeline::Category::Host, std::to_string(i));
  EXPECT_EQ(timeline::stats().dropped, 7000u);
  timeline::write();
  const auto names = eventNames(dir_ / "trace.json");
  ASSERT_EQ(names.size(), 5000u);
  for (size_t k = 0; k < names.size(); ++k) ASSERT_EQ(names[k], std::to_string(7000 + k)) << k;
}

// A number from /proc/self/status ("VmHWM:  1234 kB"), in bytes; 0 when absent.
uint64_t statusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

// The child of the test below: a short trace with XTRAIN_TRACE_EVENTS at its maximum, under an
// address-space limit of 1 GiB above what the process already maps (not under a sanitizer, which
// maps terabytes of shadow). 0 when it was written and the peak resident memory grew by less than
// 64 MiB; else a code saying what went wrong.
int traceTheLargestRing(timeline::Config c) {
  ScopedEnv max("XTRAIN_TRACE_EVENTS", "16777216");
  c.capacity = timeline::capacityFromEnvironment();
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const rlim_t limit = statusBytes("VmSize") + (rlim_t{1} << 30);
  const rlimit as{limit, limit};
  if (::setrlimit(RLIMIT_AS, &as) != 0) return 4;
#endif
  const uint64_t peakBefore = statusBytes("VmHWM");
  try {
    timeline::start(c);
    for (int i = 0; i < 20000; ++i) timeline::Span span(timeline::Category::Op, "op");
    timeline::write();
  } catch (...) {
    return 5;  // std::bad_alloc from an up-front allocation
  }
  if (timeline::stats().capacity != timeline::kMaxCapacity) return 6;
  return statusBytes("VmHWM") - peakBefore < (uint64_t{64} << 20) ? 0 : 7;
}

// XTRAIN_TRACE_EVENTS at its maximum (16777216 events, 3.3 GB of slots) used to be allocated and
// cleared when the trace started. Now a short trace costs what its events fill (in a fork).
TEST_F(TimelineWriter, TheLargestRingIsABoundNotAnUpFrontAllocation) {
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(std::_Exit(traceTheLargestRing(config())), ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(eventNames(dir_ / "trace.json").size(), 20000u);
}

}  // namespace
}  // namespace xtrain::testing
