// The DeviceInfo implementations. Internal: users see xtrain::DeviceInfo only.
#pragma once
#pragma GCC visibility push(default)

#include <memory>
#include <string>
#include <vector>

#include "device/ipu/ipu_pool.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::device {

// CPU, IPU-model and offline devices: nothing to lock.
class LocalDeviceInfo final : public DeviceInfo {
 public:
  explicit LocalDeviceInfo(Spec spec) : DeviceInfo(std::move(spec)) {}
  using DeviceInfo::Spec;
};

// A device of the host's pool: attaching takes the locks of its IPUs in lockDir (captured when the
// device was created, so later changes to XTRAIN_IPU_LOCK_DIR do not move it).
class PoolDeviceInfo final : public DeviceInfo {
 public:
  PoolDeviceInfo(Spec spec, std::string lockDir);
  ~PoolDeviceInfo() override;
  using DeviceInfo::Spec;

  const std::string& lockDir() const { return lockDir_; }

 protected:
  bool attachLocked() override;
  void detachLocked() override;
  bool isFreeLocked() const override;

 private:
  std::string lockDir_;
  std::vector<std::unique_ptr<IpuLock>> locks_;
};

// Who holds the IPUs of a pool device now ("IPU 2 is held by process 1234; ..."); "" when nobody
// does or the device is not a pool device.
std::string whoHolds(const DeviceInfo& device);

}  // namespace xtrain::device

#pragma GCC visibility pop
