// createCpuDevice / createIpuModelDevice / createOfflineIPUDevice: options, defaults and errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "device/ipu/ipu_options.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using testing::errorOf;

TEST(DeviceOptions, IpuModelDefaults) {
  auto dev = DeviceManager::createDeviceManager().createIpuModelDevice({});
  EXPECT_EQ(dev->getType(), DeviceType::IpuModel);
  EXPECT_EQ(dev->getNumIpus(), 1);
  EXPECT_EQ(dev->getTilesPerIPU(), 1472);
  EXPECT_EQ(dev->getMemoryPerTile(), 624u * 1024u);
  EXPECT_EQ(dev->getMemoryPerIPU(), 1472ull * 624u * 1024u);
  EXPECT_TRUE(dev->hasMemoryLimit());
  EXPECT_TRUE(dev->isAttached());
  EXPECT_EQ(dev->getVersion(), "ipu2");
  EXPECT_EQ(dev->getIpuIds(), std::vector<int>{0});
  EXPECT_CONTAINS(dev->toString(), "IpuModel");
}

TEST(DeviceOptions, IpuModelOptionsAreParsed) {
  auto& dm = DeviceManager::createDeviceManager();
  auto dev =
      dm.createIpuModelDevice({{"numIPUs", "4"}, {"tilesPerIPU", "16"}, {"memoryPerTile", "1MiB"}});
  EXPECT_EQ(dev->getNumIpus(), 4);
  EXPECT_EQ(dev->getTilesPerIPU(), 16);
  EXPECT_EQ(dev->getMemoryPerTile(), 1u << 20);
  EXPECT_EQ(dev->getMemoryPerIPU(), 16ull << 20);
  EXPECT_EQ(dev->getIpuIds(), (std::vector<int>{0, 1, 2, 3}));

  EXPECT_EQ(dm.createIpuModelDevice({{"memoryPerTile", "2048"}})->getMemoryPerTile(), 2048u);
  EXPECT_EQ(dm.createIpuModelDevice({{"memoryPerTile", "16 KiB"}})->getMemoryPerTile(), 16384u);
  EXPECT_EQ(dm.createIpuModelDevice({{"memoryPerTile", "1gib"}})->getMemoryPerTile(), 1ull << 30);
  EXPECT_EQ(dm.createIpuModelDevice({{"memoryPerTile", "100B"}})->getMemoryPerTile(), 100u);

  auto ipu1 = dm.createIpuModelDevice({{"ipuVersion", "ipu1"}});
  EXPECT_EQ(ipu1->getTilesPerIPU(), 1216);
  EXPECT_EQ(ipu1->getMemoryPerTile(), 256u * 1024u);
  auto override = dm.createIpuModelDevice({{"ipuVersion", "ipu1"}, {"tilesPerIPU", "8"}});
  EXPECT_EQ(override->getTilesPerIPU(), 8);
}

TEST(DeviceOptions, UnknownKeyIsNamedWithTheValidOnes) {
  auto& dm = DeviceManager::createDeviceManager();
  const std::string msg = errorOf([&] { dm.createIpuModelDevice({{"numIpus", "2"}}); });
  EXPECT_CONTAINS(msg, "'numIpus'");
  EXPECT_CONTAINS(msg, "numIPUs, tilesPerIPU, memoryPerTile");
  EXPECT_CONTAINS(msg, "did you mean 'numIPUs'");
  EXPECT_CONTAINS(msg, "createIpuModelDevice");
  const std::string msg2 = errorOf([&] { dm.createOfflineIPUDevice({{"syncPattern", "x"}}); });
  EXPECT_CONTAINS(msg2, "'syncPattern'");
  EXPECT_CONTAINS(msg2, "createOfflineIPUDevice");
}

TEST(DeviceOptions, BadValuesAreNamed) {
  auto& dm = DeviceManager::createDeviceManager();
  for (const char* bad : {"0", "-1", "abc", "2x", ""}) {
    const std::string msg = errorOf([&] { dm.createIpuModelDevice({{"numIPUs", bad}}); });
    EXPECT_CONTAINS(msg, "numIPUs");
  }
  EXPECT_CONTAINS(errorOf([&] { dm.createIpuModelDevice({{"tilesPerIPU", "0"}}); }), "tilesPerIPU");
  const std::string kb = errorOf([&] { dm.createIpuModelDevice({{"memoryPerTile", "10KB"}}); });
  EXPECT_CONTAINS(kb, "memoryPerTile");
  EXPECT_CONTAINS(kb, "KiB");
  EXPECT_CONTAINS(errorOf([&] {
                    dm.createIpuModelDevice({{"memoryPerTile", "0"}});
                  }),
                  "greater than zero");
  EXPECT_CONTAINS(errorOf([&] {
                    dm.createIpuModelDevice({{"memoryPerTile", "MiB"}});
                  }),
                  "not a byte size");
  EXPECT_CONTAINS(errorOf([&] {
                    dm.createIpuModelDevice({{"memoryPerTile", "99999999999999GiB"}});
                  }),
                  "memoryPerTile");
  EXPECT_CONTAINS(errorOf([&] { dm.createIpuModelDevice({{"ipuVersion", "ipu3"}}); }), "ipu3");
}

TEST(DeviceOptions, CompileIpuCodeIsCheckedAndHasNoEffect) {
  // PopART's MNIST tutorial passes {"compileIPUCode": True, ...} to createIpuModelDevice.
  auto& dm = DeviceManager::createDeviceManager();
  for (const char* ok : {"true", "false", "1", "0", "True"}) {
    auto dev = dm.createIpuModelDevice({{"compileIPUCode", ok}, {"tilesPerIPU", "8"}});
    EXPECT_EQ(dev->getTilesPerIPU(), 8);
    EXPECT_EQ(dev->getNumIpus(), 1);
  }
  const std::string msg = errorOf([&] { dm.createIpuModelDevice({{"compileIPUCode", "yes"}}); });
  EXPECT_CONTAINS(msg, "compileIPUCode");
  EXPECT_CONTAINS(msg, "'yes'");
  EXPECT_CONTAINS(msg, "expected true, false, 1 or 0");
}

TEST(DeviceOptions, CpuDeviceHasNoLimit) {
  auto dev = DeviceManager::createDeviceManager().createCpuDevice();
  EXPECT_EQ(dev->getType(), DeviceType::Cpu);
  EXPECT_EQ(dev->getNumIpus(), 1);
  EXPECT_FALSE(dev->hasMemoryLimit());
  EXPECT_EQ(dev->getMemoryPerIPU(), 0u);
  EXPECT_TRUE(dev->isAttached());
  EXPECT_TRUE(dev->attach());
  dev->detach();
  EXPECT_FALSE(dev->isAttached());
  EXPECT_CONTAINS(dev->toString(), "no memory limit");
}

TEST(DeviceOptions, OfflineDeviceCannotAttach) {
  auto dev = DeviceManager::createDeviceManager().createOfflineIPUDevice(
      {{"numIPUs", "2"}, {"tilesPerIPU", "4"}});
  EXPECT_EQ(dev->getType(), DeviceType::OfflineIpu);
  EXPECT_EQ(dev->getConnectionType(), DeviceConnectionType::Never);
  EXPECT_EQ(dev->getNumIpus(), 2);
  EXPECT_TRUE(dev->hasMemoryLimit());
  EXPECT_FALSE(dev->isAttached());
  EXPECT_FALSE(dev->isAvailable());
  const std::string msg = errorOf([&] { dev->attach(); });
  EXPECT_CONTAINS(msg, "offline");
  EXPECT_CONTAINS(msg, "createIpuModelDevice");
  EXPECT_CONTAINS(dev->toString(), "offline");
}

TEST(DeviceOptions, FormatBytes) {
  EXPECT_EQ(device::formatBytes(100), "100 B");
  EXPECT_EQ(device::formatBytes(uint64_t{624} * 1024), "624 KiB");
  EXPECT_EQ(device::formatBytes(3 << 19), "1.50 MiB");
  EXPECT_EQ(device::formatBytes(1ull << 30), "1 GiB");
}

TEST(DeviceOptions, EnumNames) {
  EXPECT_STREQ(toString(DeviceType::OfflineIpu), "OfflineIpu");
  EXPECT_STREQ(toString(DeviceConnectionType::OnDemand), "OnDemand");
}

}  // namespace
}  // namespace xtrain
