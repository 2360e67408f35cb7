#include <algorithm>
#include <sstream>

#include "device/ipu/device_infos.hpp"
#include "device/ipu/ipu_options.hpp"
#include "device/ipu/ipu_wait.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

const char* toString(DeviceType type) {
  switch (type) {
    case DeviceType::Cpu: return "Cpu";
    case DeviceType::IpuModel: return "IpuModel";
    case DeviceType::Ipu: return "Ipu";
    case DeviceType::OfflineIpu: return "OfflineIpu";
    case DeviceType::Sim: return "Sim";
  }
  return "Unknown";
}

const char* toString(DeviceConnectionType type) {
  switch (type) {
    case DeviceConnectionType::Always: return "Always";
    case DeviceConnectionType::OnDemand: return "OnDemand";
    case DeviceConnectionType::Never: return "Never";
  }
  return "Unknown";
}

DeviceInfo::DeviceInfo(Spec spec)
    : id_(spec.id),
      type_(spec.type),
      connection_(spec.connection),
      ipuIds_(std::move(spec.ipuIds)),
      tilesPerIpu_(spec.tilesPerIpu),
      memoryPerTile_(spec.memoryPerTile),
      version_(std::move(spec.version)) {}

DeviceInfo::~DeviceInfo() = default;

bool DeviceInfo::attachLocked() {
  return true;
}

bool DeviceInfo::attach() {
  if (type_ == DeviceType::OfflineIpu || connection_ == DeviceConnectionType::Never) {
    throw error(
        "cannot attach to device {} ({}): it is offline (DeviceConnectionType::Never or "
        "createOfflineIPUDevice) and can only compile and check memory; acquire a device with "
        "DeviceConnectionType::Always or OnDemand, or use createIpuModelDevice, to run",
        id_, xtrain::toString(type_));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (attached_) {
    return true;
  }
  attached_ = attachLocked();
  return attached_;
}

void DeviceInfo::setOnDemandAttachTimeout(unsigned seconds) {
  if (seconds > kMaxAttachWaitSeconds) {
    throw error("setOnDemandAttachTimeout: {} s is too long; at most {} (30 days)", seconds,
                kMaxAttachWaitSeconds);
  }
  attachTimeout_ = seconds;
}

bool DeviceInfo::tryAttachUntilTimeout() {
  const double timeout = getOnDemandAttachTimeout();
  const double fromEnvironment = device::waitForIpuSeconds();
  const device::WaitSubject subject{
      format("attaching device {} (IPUs {})", id_, ipuIds_),
      [this] { return device::whoHolds(*this); },
      fromEnvironment > timeout ? "XTRAIN_WAIT_FOR_IPU" : "the attach timeout"};
  return device::retryUntil(std::max(timeout, fromEnvironment), subject,
                            [this] { return attach(); });
}

void DeviceInfo::detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!attached_) {
    return;
  }
  detachLocked();
  attached_ = false;
}

bool DeviceInfo::isAttached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return attached_;
}

bool DeviceInfo::isAvailable() const {
  if (type_ == DeviceType::OfflineIpu || connection_ == DeviceConnectionType::Never) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return attached_ || isFreeLocked();
}

std::string DeviceInfo::toString() const {
  std::ostringstream os;
  os << "Device " << id_ << " (" << xtrain::toString(type_);
  if (type_ != DeviceType::Cpu) {
    os << ", " << version_;
  }
  os << "): ";
  if (type_ == DeviceType::Cpu) {
    os << "1 host CPU unit, no memory limit";
  } else {
    os << ipuIds_.size() << (ipuIds_.size() == 1 ? " IPU " : " IPUs ");
    os << format("{}", ipuIds_) << ", " << tilesPerIpu_ << " tiles x "
       << device::formatBytes(memoryPerTile_) << " = " << device::formatBytes(getMemoryPerIPU())
       << " per IPU";
  }
  os << ", connection " << xtrain::toString(connection_);
  if (type_ == DeviceType::OfflineIpu || connection_ == DeviceConnectionType::Never) {
    os << ", offline";
  } else if (isAttached()) {
    os << ", attached";
  } else {
    os << ", detached, ";
    try {
      os << (isAvailable() ? "free" : "busy");
    } catch (const error&) {
      os << "state unknown (lock directory unreadable)";
    }
  }
  return os.str();
}

}  // namespace xtrain

namespace xtrain::device {

PoolDeviceInfo::PoolDeviceInfo(Spec spec, std::string lockDir)
    : DeviceInfo(std::move(spec)), lockDir_(std::move(lockDir)) {}

PoolDeviceInfo::~PoolDeviceInfo() {
  detach();
}

bool PoolDeviceInfo::attachLocked() {
  std::vector<std::unique_ptr<IpuLock>> taken;
  for (int ipu : getIpuIds()) {
    auto lock = IpuLock::tryAcquire(lockDir_, ipu);
    if (!lock) {  // `taken` releases what was locked so far
      logging::devicex::debug("device {}: IPU {} is busy; not attached", getId(), ipu);
      return false;
    }
    taken.push_back(std::move(lock));
  }
  locks_ = std::move(taken);
  logging::devicex::debug("attached device {} (IPUs {}, locks in {})", getId(), getIpuIds(),
                          lockDir_);
  return true;
}

void PoolDeviceInfo::detachLocked() {
  locks_.clear();
  logging::devicex::debug("detached device {} (IPUs {})", getId(), getIpuIds());
}

std::string whoHolds(const DeviceInfo& device) {
  const auto* pool = dynamic_cast<const PoolDeviceInfo*>(&device);
  return pool ? describeHolders(pool->lockDir(), pool->getIpuIds()) : std::string();
}

bool PoolDeviceInfo::isFreeLocked() const {
  for (int ipu : getIpuIds()) {
    if (ipuHolder(lockDir_, ipu)) {
      return false;
    }
  }
  return true;
}

}  // namespace xtrain::device
