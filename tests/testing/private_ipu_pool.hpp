// A test fixture with a private pool of 8 simulated IPUs: its own lock directory (in the scratch
// directory), XTRAIN_IPU_IDS and XTRAIN_WAIT_FOR_IPU unset, the DeviceManager's OnDemand attach
// timeout back at 0 afterwards. Tests that take and hold IPUs use it so that they never meet
// another test's devices or the user's environment.
#pragma once

#include <optional>

#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::testing {

class PrivateIpuPoolTest : public ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    lockDir_ = path("ipu-locks");
    env_.emplace(lockDir_);
  }
  void TearDown() override {
    dm().setOnDemandAttachTimeout(0);
    env_.reset();
    ScratchDirTest::TearDown();
  }

  DeviceManager& dm() { return DeviceManager::createDeviceManager(); }

  std::string lockDir_;

 private:
  struct Environment {
    explicit Environment(const std::string& lockDir)
        : lockDir_("XTRAIN_IPU_LOCK_DIR", lockDir.c_str()),
          numIpus_("XTRAIN_NUM_IPUS", "8"),
          ipuIds_("XTRAIN_IPU_IDS", nullptr),
          wait_("XTRAIN_WAIT_FOR_IPU", nullptr) {}
    ScopedEnv lockDir_, numIpus_, ipuIds_, wait_;
  };
  std::optional<Environment> env_;
};

}  // namespace xtrain::testing
