// SessionOptions.enableEngineCaching, enableVariablesCaching and cachePath are accepted with no
// effect (docs/session-options.md, Engine caching): a session that sets them trains as one that
// does not, bit for bit, writes nothing to cachePath, and says why in the session module's debug
// log.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/scratch_dir.hpp"
#include "testing/session_log.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain::testing {
namespace {

class EngineCaching : public SessionLogTest {
 protected:
  // The weights and velocities after 3 steps of a session with `options`.
  static std::vector<float> train(const MlpModel& m, const SessionOptions& options) {
    auto s = makeMlpSession(
        m, options,
        SGD({{"defaultLearningRate", {0.1f, true}}, {"defaultMomentum", {0.9f, true}}}));
    trainMlpSteps(*s, m, 1, 0, 1, 0, 3);
    return readTensors(*s, mlpWeightsAndVelocities());
  }
};

TEST_F(EngineCaching, TheMembersAreAcceptedWriteNothingAndChangeNothing) {
  const MlpModel m = buildMlpModel();
  const std::vector<float> plain = train(m, {});
  SessionOptions o;
  o.enableEngineCaching = true;
  o.enableVariablesCaching = false;
  o.cachePath = path("cache");
  for (int session = 0; session < 2; ++session) {
    EXPECT_EQ(train(m, o), plain) << "session " << session;
  }
  EXPECT_FALSE(std::filesystem::exists(path("cache")));
  const std::string text = logText();
  EXPECT_NE(text.find("SessionOptions.enableEngineCaching = true has no effect on a simulated IPU: "
                      "not implemented, as not worth it"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("SessionOptions.cachePath = \"" + path("cache") +
                      "\" has no effect on a simulated IPU: used only by enableEngineCaching"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace xtrain::testing
