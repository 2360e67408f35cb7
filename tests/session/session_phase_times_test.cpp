// The session module's debug log says where a session's creation and prepareDevice spend their
// time, phase by phase: the figures docs/performance.md ("Session creation") quotes for
// SessionOptions.enableEngineCaching come from these lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "session/phase_times.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/session_log.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain::testing {
namespace {

TEST(PhaseTimes, SummaryNamesEachPhaseInOrderWithTheTotal) {
  session::PhaseTimes t;
  t.lap("import");
  t.lap("training graph");
  const std::string s = t.summary();
  EXPECT_EQ(s.find(" ms: import "), s.find(" ms:")) << s;
  EXPECT_NE(s.find(" ms, training graph "), std::string::npos) << s;
  EXPECT_EQ(s.substr(s.size() - 3), " ms") << s;
  EXPECT_GE(t.totalMs(), 0.0);
}

// The session module's lines go to a file of this test while it runs.
class SessionPhaseLog : public SessionLogTest {
 protected:
};

// The line starting with `prefix`, or "" when there is none.
std::string lineWith(const std::string& text, const std::string& prefix) {
  const auto p = text.find(prefix);
  if (p == std::string::npos) return "";
  return text.substr(p, text.find('\n', p) - p);
}

TEST_F(SessionPhaseLog, CreationAndPrepareDeviceAreTimedPhaseByPhase) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, {}, ConstSGD(0.1f));
  const std::string text = logText();
  const std::string created = lineWith(text, "session created in ");
  ASSERT_FALSE(created.empty()) << text;
  for (const char* phase : {"options", "import", "checks", "fusion", "training graph"}) {
    EXPECT_NE(created.find(std::string(phase) + " "), std::string::npos)
        << phase << ": " << created;
  }
  const std::string prepared = lineWith(text, "prepareDevice in ");
  ASSERT_FALSE(prepared.empty()) << text;
  for (const char* phase :
       {"memory check", "lowering (kernels, buffer plan)", "buffers and weights", "exchange"}) {
    EXPECT_NE(prepared.find(std::string(phase) + " "), std::string::npos)
        << phase << ": " << prepared;
  }
}

}  // namespace
}  // namespace xtrain::testing
