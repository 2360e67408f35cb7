// device::MemoryModel: per-IPU accounting, the report, and OutOfMemoryException on overflow.
#include "device/ipu/memory_model.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "testing/error_testing.hpp"
#include "testing/process_testing.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device {
namespace {

// 2 IPUs of 4 tiles x 1 KiB = 4 KiB each.
std::shared_ptr<DeviceInfo> smallModel() {
  return DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", "2"}, {"tilesPerIPU", "4"}, {"memoryPerTile", "1KiB"}});
}

TEST(MemoryModel, CountsPerIpuAndClass) {
  auto model = MemoryModel::forDevice(*smallModel());
  EXPECT_EQ(model.numIpus(), 2);
  EXPECT_TRUE(model.hasLimit());
  EXPECT_EQ(model.capacity(), 4096u);
  model.add(0, TensorClass::Weights, "w0", 1000);
  model.add(0, TensorClass::Weights, "b0", 24);
  model.add(0, TensorClass::OptimizerState, "w0/momentum", 1000);
  model.add(0, TensorClass::Activations, "relu0", 512);
  model.add(1, TensorClass::Accumulators, "w1/accum", 300);
  EXPECT_EQ(model.used(0), 2536u);
  EXPECT_EQ(model.used(0, TensorClass::Weights), 1024u);
  EXPECT_EQ(model.used(0, TensorClass::Streams), 0u);
  EXPECT_EQ(model.used(1), 300u);
  EXPECT_TRUE(model.overflowingIpus().empty());
  EXPECT_NO_THROW(model.check());
  EXPECT_THROW(model.add(2, TensorClass::Weights, "x", 1), internal_error);
  model.clear();
  EXPECT_EQ(model.used(0), 0u);
}

TEST(MemoryModel, ReportHasClassesTotalsCapacityAndLargestTensors) {
  auto model = MemoryModel::forDevice(*smallModel());
  model.add(0, TensorClass::Weights, "w0", 1000);
  model.add(0, TensorClass::OptimizerState, "w0/momentum", 1000);
  model.add(0, TensorClass::Activations, "relu0", 512);
  model.add(0, TensorClass::Streams, "input", 64);
  model.add(0, TensorClass::Other, "scratch", 8);
  model.add(1, TensorClass::Weights, "big", 5000);
  const std::string r = model.report();
  for (const char* s : {"IpuModel device 0",
                        "IPU 0:",
                        "IPU 1: OUT OF MEMORY",
                        "Weights",
                        "OptimizerState",
                        "Accumulators",
                        "Activations (peak live)",
                        "Streams",
                        "Other",
                        "Total",
                        "Capacity",
                        "4 KiB (4096 B)",
                        "Free",
                        "1.48 KiB (1512 B)",
                        "Overflow",
                        "904 B",
                        "Largest tensors:",
                        "w0/momentum",
                        "big",
                        "2.52 KiB (2584 B)",
                        "122.1% used"}) {
    EXPECT_CONTAINS(r, s);
  }
  // Largest first: w0 and w0/momentum (1000 B) before relu0 (512 B) before input (64 B).
  EXPECT_LT(r.find("w0 "), r.find("relu0"));
  EXPECT_LT(r.find("relu0"), r.find("input"));
  const std::string top1 = model.report(1);
  EXPECT_EQ(top1.find("relu0"), std::string::npos) << top1;
}

TEST(MemoryModel, OverflowThrowsOutOfMemoryWithReport) {
  auto model = MemoryModel::forDevice(*smallModel());
  model.add(0, TensorClass::Weights, "small", 100);
  model.add(1, TensorClass::Weights, "embedding", 4000);
  model.add(1, TensorClass::Activations, "logits", 200);
  EXPECT_EQ(model.overflowingIpus(), std::vector<int>{1});
  try {
    model.check();
    FAIL() << "expected OutOfMemoryException";
  } catch (const OutOfMemoryException& e) {
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "IPU 1");
    EXPECT_CONTAINS(what, "4.10 KiB (4200 B)");  // needed
    EXPECT_CONTAINS(what, "4 KiB (4096 B)");     // capacity
    EXPECT_CONTAINS(what, "4 tiles x 1 KiB");
    EXPECT_CONTAINS(what, "over by 104 B");
    EXPECT_CONTAINS(what, "embedding");
    EXPECT_EQ(e.getSummaryReport(), model.report());
  }
  // OutOfMemoryException is an xtrain::error.
  EXPECT_THROW(model.check(), error);
}

TEST(MemoryModel, ManyIpusOverflowing) {
  MemoryModel model("test device", 3, MemoryModel::Limits{1, 10});
  for (int i = 0; i < 3; ++i) {
    model.add(i, TensorClass::Weights, "w", 11);
  }
  EXPECT_EQ(model.overflowingIpus(), (std::vector<int>{0, 1, 2}));
  try {
    model.check();
    FAIL();
  } catch (const OutOfMemoryException& e) {
    EXPECT_CONTAINS(e.what(), "IPU 0 of test device");
    EXPECT_CONTAINS(e.what(), "2 more IPUs overflow: [1,2]");
  }
}

TEST(MemoryModel, PoolDeviceNamesItsPoolIpus) {
  char tmpl[] = "/tmp/xtrain-device-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const xtrain::testing::ScopedEnv lockDir("XTRAIN_IPU_LOCK_DIR", tmpl);
  {
    // Offline: nothing is locked, memory is still checked.
    auto dev = DeviceManager::createDeviceManager().acquireDeviceById(3, SyncPattern::Full,
                                                                      DeviceConnectionType::Never);
    auto model = MemoryModel::forDevice(*dev);
    EXPECT_EQ(model.capacity(), 1472ull * 624 * 1024);
    model.add(0, TensorClass::Weights, "huge", 2ull << 30);
    try {
      model.check();
      FAIL();
    } catch (const OutOfMemoryException& e) {
      EXPECT_CONTAINS(e.what(), "IPU 0 (pool IPU 3) of Ipu device 3");
      EXPECT_CONTAINS(e.what(), "897 MiB");
    }
  }
  std::filesystem::remove_all(tmpl);
}

TEST(MemoryModel, OfflineDevicesCheckAndCpuDevicesNeverOverflow) {
  auto offline = DeviceManager::createDeviceManager().createOfflineIPUDevice(
      {{"tilesPerIPU", "2"}, {"memoryPerTile", "100"}});
  auto model = MemoryModel::forDevice(*offline);
  model.add(0, TensorClass::Weights, "w", 201);
  EXPECT_THROW(model.check(), OutOfMemoryException);

  auto cpu = MemoryModel::forDevice(*DeviceManager::createDeviceManager().createCpuDevice());
  EXPECT_FALSE(cpu.hasLimit());
  cpu.add(0, TensorClass::Weights, "w", 1ull << 40);
  EXPECT_NO_THROW(cpu.check());
  EXPECT_CONTAINS(cpu.report(), "no limit");
  EXPECT_CONTAINS(cpu.report(), "1 TiB");
}

}  // namespace
}  // namespace xtrain::device
