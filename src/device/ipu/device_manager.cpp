#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "device/ipu/device_infos.hpp"
#include "device/ipu/ipu_options.hpp"
#include "device/ipu/ipu_pool.hpp"
#include "device/ipu/ipu_wait.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using device::LocalDeviceInfo;
using device::PoolConfig;
using device::PoolDevice;
using device::PoolDeviceInfo;

bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

std::shared_ptr<DeviceInfo> makeLocal(DeviceType type, DeviceConnectionType connection,
                                      const device::IpuDeviceOptions& opts) {
  LocalDeviceInfo::Spec spec;
  spec.id = 0;
  spec.type = type;
  spec.connection = connection;
  for (int i = 0; i < opts.numIpus; ++i) {
    spec.ipuIds.push_back(i);
  }
  spec.tilesPerIpu = opts.shape.tilesPerIpu;
  spec.memoryPerTile = opts.shape.memoryPerTile;
  spec.version = opts.shape.version;
  return std::make_shared<LocalDeviceInfo>(std::move(spec));
}

std::shared_ptr<PoolDeviceInfo> makePoolDevice(const PoolConfig& config, const PoolDevice& d,
                                               int tilesPerIpu, DeviceConnectionType connection) {
  const device::IpuShape shape;  // the pool's IPUs are ipu2s
  PoolDeviceInfo::Spec spec;
  spec.id = d.id;
  spec.type = DeviceType::Ipu;
  spec.connection = connection;
  spec.ipuIds = d.ipus();
  spec.tilesPerIpu = tilesPerIpu == 0 ? shape.tilesPerIpu : tilesPerIpu;
  spec.memoryPerTile = shape.memoryPerTile;
  spec.version = shape.version;
  return std::make_shared<PoolDeviceInfo>(std::move(spec), config.lockDir);
}

void checkNumIpus(const char* what, int numIpus, const PoolConfig& config) {
  if (!isPowerOfTwo(numIpus)) {
    throw error("{}: numIpus must be a power of two (1, 2, 4, ...), got {}", what, numIpus);
  }
  if (numIpus > config.numIpus) {
    throw error(
        "Failed to acquire device with {} IPUs. Ensure that there are sufficient IPUs available. "
        "{}: asked for {} IPUs but the pool has {} (XTRAIN_NUM_IPUS)",
        numIpus, what, numIpus, config.numIpus);
  }
}

void checkTilesPerIpu(const char* what, int tilesPerIPU) {
  const int fullTiles = device::IpuShape{}.tilesPerIpu;
  if (tilesPerIPU < 0 || tilesPerIPU > fullTiles) {
    throw error("{}: tilesPerIPU must be 0 (the whole IPU) or 1..{}, got {}", what, fullTiles,
                tilesPerIPU);
  }
}

bool isAllowed(const PoolConfig& config, const PoolDevice& d) {
  if (!config.allowedIpus) {
    return true;
  }
  for (int ipu : d.ipus()) {
    if (!std::binary_search(config.allowedIpus->begin(), config.allowedIpus->end(), ipu)) {
      return false;
    }
  }
  return true;
}

// Whether a launcher reserved one of d's IPUs for its job's instances. Only a process without
// XTRAIN_IPU_IDS respects reservations: one with it is an instance of the job that made them.
bool reservedForAJob(const PoolConfig& config, const PoolDevice& d) {
  if (config.allowedIpus) return false;
  for (int ipu : d.ipus()) {
    if (device::ipuReserver(config.lockDir, ipu)) return true;
  }
  return false;
}

// " after waiting 2 s (XTRAIN_WAIT_FOR_IPU)" for an error message; "" when it did not wait.
std::string waitedText(double seconds) {
  return seconds > 0 ? format(" after waiting {} s (XTRAIN_WAIT_FOR_IPU)", seconds) : std::string();
}

std::string describeIds(const std::vector<PoolDevice>& devices) {
  std::vector<int> ids;
  ids.reserve(devices.size());
  for (const auto& d : devices) {
    ids.push_back(d.id);
  }
  if (ids.size() > 16) {
    return format("{}..{}", ids.front(), ids.back());
  }
  return format("{}", ids);
}

}  // namespace

DeviceManager& DeviceManager::createDeviceManager() {
  static DeviceManager instance;
  return instance;
}

std::shared_ptr<DeviceInfo> DeviceManager::createCpuDevice() {
  device::IpuDeviceOptions opts;
  opts.numIpus = 1;
  opts.shape = device::IpuShape{"cpu", 1, 0};
  auto dev = makeLocal(DeviceType::Cpu, DeviceConnectionType::Always, opts);
  dev->attach();
  return dev;
}

std::shared_ptr<DeviceInfo> DeviceManager::createIpuModelDevice(
    const std::map<std::string, std::string>& options) {
  auto dev = makeLocal(DeviceType::IpuModel, DeviceConnectionType::Always,
                       device::parseIpuDeviceOptions(options, "createIpuModelDevice"));
  dev->attach();
  return dev;
}

std::shared_ptr<DeviceInfo> DeviceManager::createSimDevice(
    const std::map<std::string, std::string>& options) {
  std::map<std::string, std::string> withDefaults = options;
  withDefaults.emplace("tilesPerIPU", "4");  // PopART's Sim default
  auto dev = makeLocal(DeviceType::Sim, DeviceConnectionType::Always,
                       device::parseIpuDeviceOptions(withDefaults, "createSimDevice"));
  dev->attach();
  return dev;
}

std::shared_ptr<DeviceInfo> DeviceManager::createOfflineIPUDevice(
    const std::map<std::string, std::string>& options) {
  return makeLocal(DeviceType::OfflineIpu, DeviceConnectionType::Never,
                   device::parseIpuDeviceOptions(options, "createOfflineIPUDevice"));
}

std::vector<std::shared_ptr<DeviceInfo>> DeviceManager::enumerateDevices(
    SyncPattern /*pattern*/, int numIpus, DeviceType deviceType,
    DeviceConnectionType connectionType, int tilesPerIPU) {
  if (deviceType != DeviceType::Ipu) {
    // As Poplar lists no model or simulator devices, PopART's list is empty for these types.
    logging::devicex::debug(
        "enumerateDevices: the pool holds only DeviceType::Ipu devices; none of type {} (use "
        "createCpuDevice, createIpuModelDevice, createSimDevice or createOfflineIPUDevice)",
        xtrain::toString(deviceType));
    return {};
  }
  const PoolConfig config = device::readPoolConfig();
  if (numIpus != 0) {
    checkNumIpus("enumerateDevices", numIpus, config);
  }
  checkTilesPerIpu("enumerateDevices", tilesPerIPU);
  if (connectionType != DeviceConnectionType::Never) {
    device::ensureLockDir(config);
  }
  std::vector<std::shared_ptr<DeviceInfo>> out;
  for (const auto& d : device::poolDevices(config.numIpus, numIpus)) {
    out.push_back(withTimeout(makePoolDevice(config, d, tilesPerIPU, connectionType)));
  }
  return out;
}

void DeviceManager::setOnDemandAttachTimeout(unsigned seconds) {
  if (seconds > DeviceInfo::kMaxAttachWaitSeconds) {
    throw error("setOnDemandAttachTimeout: {} s is too long; at most {} (30 days)", seconds,
                DeviceInfo::kMaxAttachWaitSeconds);
  }
  attachTimeout_ = seconds;
}

std::shared_ptr<DeviceInfo> DeviceManager::withTimeout(std::shared_ptr<DeviceInfo> device) const {
  if (device) device->setOnDemandAttachTimeout(attachTimeout_.load());
  return device;
}

std::shared_ptr<DeviceInfo> DeviceManager::acquireAvailable(int numIpus, int tilesPerIPU,
                                                            DeviceConnectionType connectionType,
                                                            DeviceSelectionCriterion criterion,
                                                            bool throwIfBusy) {
  const char* what = throwIfBusy ? "acquireAvailableDevice" : "tryAcquireAvailableDevice";
  const PoolConfig config = device::readPoolConfig();
  checkNumIpus(what, numIpus, config);
  checkTilesPerIpu(what, tilesPerIPU);
  // Read before anything is taken, so that a bad value fails the call at once.
  const double waitSeconds = throwIfBusy ? device::waitForIpuSeconds() : 0.0;

  std::vector<PoolDevice> candidates;
  for (const auto& d : device::poolDevices(config.numIpus, numIpus)) {
    if (isAllowed(config, d)) {
      candidates.push_back(d);
    }
  }
  if (candidates.empty()) {
    throw error(
        "{}: no device of {} IPUs can be made of the IPUs in XTRAIN_IPU_IDS={} (a device of k IPUs "
        "holds an aligned range of k IPUs: k*j .. k*j+k-1)",
        what, numIpus, config.allowedText);
  }
  if (criterion == DeviceSelectionCriterion::Random) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (randomState_ == 0) {
      randomState_ =
          (static_cast<uint64_t>(::getpid()) << 32 ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) |
          1;
    }
    for (size_t i = candidates.size(); i > 1; --i) {
      randomState_ = randomState_ * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(candidates[i - 1], candidates[(randomState_ >> 33) % i]);
    }
  }

  if (connectionType == DeviceConnectionType::Never) {
    return withTimeout(makePoolDevice(config, candidates.front(), tilesPerIPU, connectionType));
  }
  device::ensureLockDir(config);
  std::shared_ptr<DeviceInfo> found;
  const auto tryOnce = [&] {
    for (const auto& d : candidates) {
      auto dev = makePoolDevice(config, d, tilesPerIPU, connectionType);
      if (connectionType == DeviceConnectionType::Always) {
        // Attach first, then look for a reservation: xrun reserves first, then looks for holders,
        // so of a process and a launcher racing for one IPU at least one sees the other.
        if (!dev->attach()) continue;
        if (!reservedForAJob(config, d)) {
          found = std::move(dev);
          return true;
        }
        dev->detach();
      } else if (dev->isAvailable() && !reservedForAJob(config, d)) {
        found = std::move(dev);
        return true;
      }
    }
    return false;
  };

  std::set<int> ipus;
  for (const auto& d : candidates) {
    for (int ipu : d.ipus()) {
      ipus.insert(ipu);
    }
  }
  const auto describeBusy = [&] {
    return device::describeHolders(config.lockDir, std::vector<int>(ipus.begin(), ipus.end()));
  };
  const device::WaitSubject subject{
      format("{}: a device of {} IPUs among devices {}", what, numIpus, describeIds(candidates)),
      describeBusy};
  if (device::retryUntil(waitSeconds, subject, tryOnce)) {
    return withTimeout(std::move(found));
  }
  if (!throwIfBusy) {
    return nullptr;
  }

  const std::string holders = describeBusy();
  // A runtime_error (PopART: a device that cannot be attached is a runtime fault), not bad input:
  // the same call succeeds once the holder lets go.
  throw runtime_error(
      "Failed to acquire device with {} IPUs. Ensure that there are sufficient IPUs available. "
      "{}: no free device of {} IPUs among devices {}{}{}: {} (lock directory {})",
      numIpus, what, numIpus, describeIds(candidates),
      config.allowedIpus ? " (XTRAIN_IPU_IDS=" + config.allowedText + ")" : std::string(),
      waitedText(waitSeconds),
      holders.empty() ? std::string("they were busy a moment ago; retry") : holders,
      config.lockDir);
}

std::shared_ptr<DeviceInfo> DeviceManager::acquireById(int id, DeviceConnectionType connectionType,
                                                       bool throwIfBusy) {
  const char* what = throwIfBusy ? "acquireDeviceById" : "tryAcquireDeviceById";
  const PoolConfig config = device::readPoolConfig();
  const auto d = device::poolDeviceById(config.numIpus, id);
  if (!d) {
    throw error(
        "No such device set id: '{}'. {}: {} is not a device id; a pool of {} IPUs "
        "(XTRAIN_NUM_IPUS) has ids 0..{} (0..{} are the single IPUs, then pairs, fours, ...)",
        id, what, id, config.numIpus, device::numPoolDeviceIds(config.numIpus) - 1,
        config.numIpus - 1);
  }
  auto dev = withTimeout(makePoolDevice(config, *d, 0, connectionType));
  if (connectionType == DeviceConnectionType::Never) {
    return dev;
  }
  const double waitSeconds = throwIfBusy ? device::waitForIpuSeconds() : 0.0;
  device::ensureLockDir(config);
  const auto describeBusy = [&] { return device::describeHolders(config.lockDir, d->ipus()); };
  const device::WaitSubject subject{format("{}: device {} (IPUs {})", what, id, d->ipus()),
                                    describeBusy};
  if (device::retryUntil(waitSeconds, subject, [&] {
        return connectionType == DeviceConnectionType::Always ? dev->attach() : dev->isAvailable();
      })) {
    return dev;
  }
  if (!throwIfBusy) {
    return nullptr;
  }
  const std::string holders = describeBusy();
  throw runtime_error(
      "Failed to acquire device with id '{}'. {}: device {} (IPUs {}) is busy{}: {} "
      "(lock directory {})",
      id, what, id, d->ipus(), waitedText(waitSeconds),
      holders.empty() ? std::string("it was busy a moment ago; retry") : holders, config.lockDir);
}

std::shared_ptr<DeviceInfo> DeviceManager::acquireAvailableDevice(
    int numIpus, int tilesPerIPU, SyncPattern /*pattern*/, DeviceConnectionType connectionType,
    DeviceSelectionCriterion selectionCriterion) {
  return acquireAvailable(numIpus, tilesPerIPU, connectionType, selectionCriterion, true);
}

std::shared_ptr<DeviceInfo> DeviceManager::tryAcquireAvailableDevice(
    int numIpus, int tilesPerIPU, SyncPattern /*pattern*/, DeviceConnectionType connectionType,
    DeviceSelectionCriterion selectionCriterion) {
  return acquireAvailable(numIpus, tilesPerIPU, connectionType, selectionCriterion, false);
}

std::shared_ptr<DeviceInfo> DeviceManager::acquireDeviceById(int id, SyncPattern /*pattern*/,
                                                             DeviceConnectionType connectionType) {
  return acquireById(id, connectionType, true);
}

std::shared_ptr<DeviceInfo> DeviceManager::tryAcquireDeviceById(
    int id, SyncPattern /*pattern*/, DeviceConnectionType connectionType) {
  return acquireById(id, connectionType, false);
}

}  // namespace xtrain
