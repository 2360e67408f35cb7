// Devices, with PopART's names: DeviceManager hands out DeviceInfo objects for a CPU, an IPU model,
// a (simulated) IPU from the host's pool, or an offline IPU (compile and memory check only).
// docs/devices.md.
//
// The pool: XTRAIN_NUM_IPUS simulated IPUs per host (default 64), numbered 0..N-1. Devices have 1,
// 2, 4, ... IPUs and Graphcore's ids: 0..N-1 are the single IPUs, then the pairs {0,1}, {2,3}, ...
// (ids N..N+N/2-1), then the fours, and so on; a device of k IPUs always holds an aligned,
// contiguous range [j*k, (j+1)*k).
//
// Exclusivity: attaching to a pool device takes an OS file lock per IPU (one file per IPU in
// $XTRAIN_IPU_LOCK_DIR, default /tmp/xtrain-ipus-<uid>). The locks are held by the open file, so
// they are exclusive between processes AND between DeviceInfo objects of one process, and the
// kernel drops them when the holder dies. A device is free only when all its IPUs are. Locks are
// released by detach() or by the DeviceInfo's destructor. Lock files are opened close-on-exec; a
// child made by fork() without exec shares its parent's locks.
//
// XTRAIN_IPU_IDS (set by xrun: "4,5" or "4-7"): acquireAvailableDevice picks only devices made of
// these IPUs. acquireDeviceById is not restricted by it (the caller named the device).
//
// XTRAIN_WAIT_FOR_IPU (seconds, a non-negative number; unset or 0: no wait):
// acquireAvailableDevice, acquireDeviceById and tryAttachUntilTimeout wait up to that long for busy
// IPUs instead of failing, retrying every 50 ms, with one info line (module devicex) when they
// start waiting and one when they get the device or give up. The try* acquisitions never wait (they
// are for polling).
//
// Environment variables are read at each call, not cached.
//
// Threading: DeviceManager's methods may be called from any thread. A DeviceInfo's methods are
// thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "xtrain/api.hpp"

namespace xtrain {

// Sim: PopART's IPU simulator device; in xtrain every device is simulated, and a Sim device is an
// IPU model of PopART's Sim defaults (4 tiles per IPU).
enum class DeviceType { Cpu, IpuModel, Ipu, OfflineIpu, Sim };

// Always: attach when acquired (acquisition fails if the device is busy).
// OnDemand: pick a device that is free now; a session attaches it after compiling (prepareDevice,
// with tryAttachUntilTimeout), so a compile that fails never held the IPUs. attach() fails if it
// was taken since. Never: offline; the device is never attached (attach() throws): for compiling
// and memory checks only.
enum class DeviceConnectionType { Always, OnDemand, Never };

// Accepted for source compatibility with PopART; a simulated device has no sync configuration.
enum class SyncPattern { Full, SinglePipeline, ReplicaAndLadder };

// Which free device acquireAvailableDevice takes: the lowest id, or one at random.
enum class DeviceSelectionCriterion { First, Random };

XTRAIN_API const char* toString(DeviceType type);
XTRAIN_API const char* toString(DeviceConnectionType type);

class XTRAIN_API DeviceInfo {
 public:
  virtual ~DeviceInfo();
  DeviceInfo(const DeviceInfo&) = delete;
  DeviceInfo& operator=(const DeviceInfo&) = delete;

  // Pool devices: the Graphcore-style device id. CPU, IPU-model and createOfflineIPUDevice devices:
  // 0.
  int getId() const { return id_; }
  int getNumIpus() const { return static_cast<int>(ipuIds_.size()); }
  int getTilesPerIPU() const { return tilesPerIpu_; }
  // Bytes of memory per tile; 0 when the device has no memory limit (CPU).
  uint64_t getMemoryPerTile() const { return memoryPerTile_; }
  // getTilesPerIPU() * getMemoryPerTile(); 0 when the device has no memory limit (CPU).
  uint64_t getMemoryPerIPU() const { return static_cast<uint64_t>(tilesPerIpu_) * memoryPerTile_; }
  bool hasMemoryLimit() const { return memoryPerTile_ != 0; }
  DeviceType getType() const { return type_; }
  DeviceConnectionType getConnectionType() const { return connection_; }
  // "ipu1", "ipu2", "ipu21" or "cpu".
  const std::string& getVersion() const { return version_; }
  // Pool devices: the pool's global IPU ids this device holds. Others: 0..getNumIpus()-1.
  const std::vector<int>& getIpuIds() const { return ipuIds_; }

  // Pool devices: takes the IPUs' locks; false when any of them is held elsewhere (nothing is taken
  // then). CPU and IPU-model devices always attach. Offline devices (type OfflineIpu or connection
  // Never) throw xtrain::error. Attaching an attached device returns true.
  bool attach();
  // attach(), retried every 50 ms until it succeeds or the wait is over: the larger of
  // getOnDemandAttachTimeout() and XTRAIN_WAIT_FOR_IPU seconds (0: one try). Logs one info line
  // (module devicex) when it starts waiting, naming who holds the IPUs, and one when it attaches or
  // gives up. False when it did not attach. Offline devices throw as attach() does.
  bool tryAttachUntilTimeout();
  // Seconds tryAttachUntilTimeout keeps trying. Devices from enumerateDevices and the acquire calls
  // start with the DeviceManager's value (setOnDemandAttachTimeout); others with 0. More than
  // kMaxAttachWaitSeconds throws xtrain::error.
  void setOnDemandAttachTimeout(unsigned seconds);
  unsigned getOnDemandAttachTimeout() const { return attachTimeout_.load(); }
  // The longest wait setOnDemandAttachTimeout and XTRAIN_WAIT_FOR_IPU accept: 30 days.
  static constexpr unsigned kMaxAttachWaitSeconds = 30u * 24 * 3600;

  // Releases the locks. Detaching a detached device does nothing.
  void detach();
  bool isAttached() const;
  // True when attached, or when all its IPUs are free right now (a snapshot; another process may
  // take them before attach()). Offline devices: false.
  bool isAvailable() const;

  // One line: id, type, IPUs, tiles and memory, connection type and state.
  std::string toString() const;

 protected:
  struct Spec {
    int id = 0;
    DeviceType type = DeviceType::Cpu;
    DeviceConnectionType connection = DeviceConnectionType::Always;
    std::vector<int> ipuIds;
    int tilesPerIpu = 1;
    uint64_t memoryPerTile = 0;
    std::string version;
  };
  explicit DeviceInfo(Spec spec);

  // Called with mutex_ held. Pool devices override these; the defaults model a device without
  // locks.
  virtual bool attachLocked();
  virtual void detachLocked() {}
  virtual bool isFreeLocked() const { return true; }

 private:
  int id_;
  DeviceType type_;
  DeviceConnectionType connection_;
  std::vector<int> ipuIds_;
  int tilesPerIpu_;
  uint64_t memoryPerTile_;
  std::string version_;
  mutable std::mutex mutex_;
  bool attached_ = false;
  std::atomic<unsigned> attachTimeout_{0};
};

class XTRAIN_API DeviceManager {
 public:
  // The process-wide instance.
  static DeviceManager& createDeviceManager();

  DeviceManager(const DeviceManager&) = delete;
  DeviceManager& operator=(const DeviceManager&) = delete;

  // A host CPU device: 1 IPU-like unit, no memory limit, no replication. Attached.
  std::shared_ptr<DeviceInfo> createCpuDevice();

  // An IPU model: options numIPUs (default 1), tilesPerIPU (default 1472), memoryPerTile (bytes, or
  // with a KiB/MiB/GiB suffix; default 624KiB), ipuVersion ("ipu2" default, "ipu21", "ipu1": sets
  // the defaults of the other two). An unknown key throws xtrain::error naming it and the valid
  // ones. Attached.
  std::shared_ptr<DeviceInfo> createIpuModelDevice(
      const std::map<std::string, std::string>& options = {});

  // PopART's simulator device (type Sim): same options as createIpuModelDevice, but tilesPerIPU
  // defaults to 4 as PopART's does. It runs as an IPU model does (xtrain's devices are all
  // simulated). Attached.
  std::shared_ptr<DeviceInfo> createSimDevice(
      const std::map<std::string, std::string>& options = {});

  // An offline IPU device (type OfflineIpu): same options as createIpuModelDevice. Compiles and
  // checks memory; attach() throws.
  std::shared_ptr<DeviceInfo> createOfflineIPUDevice(
      const std::map<std::string, std::string>& options = {});

  // The pool's devices of numIpus IPUs (a power of two; 0, an xtrain extension: every size), by id,
  // none attached, each with the connection type asked for (attach() or a session takes one;
  // isAvailable() and toString() say whether it is free now). tilesPerIPU 0 means the whole IPU;
  // 1..1472 lists devices with that many tiles per IPU. The pool holds IPUs only: for another
  // deviceType the list is empty, as PopART's is (CPU, IPU-model, simulator and offline devices
  // are made by the create* calls). A numIpus that is negative, not a power of two or more than the
  // pool, or a bad tilesPerIPU throws xtrain::error.
  std::vector<std::shared_ptr<DeviceInfo>> enumerateDevices(
      SyncPattern pattern = SyncPattern::Full, int numIpus = 1,
      DeviceType deviceType = DeviceType::Ipu,
      DeviceConnectionType connectionType = DeviceConnectionType::Always, int tilesPerIPU = 0);

  // The attach timeout (seconds) of the devices enumerateDevices and the acquire calls make from
  // now on: their tryAttachUntilTimeout, and so a session's OnDemand attach, retries that long.
  // Default 0. More than DeviceInfo::kMaxAttachWaitSeconds throws xtrain::error.
  void setOnDemandAttachTimeout(unsigned seconds);
  unsigned getOnDemandAttachTimeout() const { return attachTimeout_.load(); }

  // A free pool device of numIpus IPUs (a power of two), among the XTRAIN_IPU_IDS devices when that
  // is set. tilesPerIPU 0 means the whole IPU; fewer tiles give a device with that many tiles per
  // IPU. When none is free, waits up to XTRAIN_WAIT_FOR_IPU seconds for one. Throws xtrain::error
  // when none is free then (naming who holds what) or the request is invalid.
  std::shared_ptr<DeviceInfo> acquireAvailableDevice(
      int numIpus = 1, int tilesPerIPU = 0, SyncPattern pattern = SyncPattern::Full,
      DeviceConnectionType connectionType = DeviceConnectionType::Always,
      DeviceSelectionCriterion selectionCriterion = DeviceSelectionCriterion::First);

  // The pool device with this id. When it is busy, waits up to XTRAIN_WAIT_FOR_IPU seconds for it.
  // Throws xtrain::error when it is busy then (naming the holder) or the id is not a valid device
  // id.
  std::shared_ptr<DeviceInfo> acquireDeviceById(
      int id, SyncPattern pattern = SyncPattern::Full,
      DeviceConnectionType connectionType = DeviceConnectionType::Always);

  // As above, but nullptr when no matching device is free (at once: these never wait). Invalid
  // requests still throw.
  std::shared_ptr<DeviceInfo> tryAcquireAvailableDevice(
      int numIpus = 1, int tilesPerIPU = 0, SyncPattern pattern = SyncPattern::Full,
      DeviceConnectionType connectionType = DeviceConnectionType::Always,
      DeviceSelectionCriterion selectionCriterion = DeviceSelectionCriterion::First);
  std::shared_ptr<DeviceInfo> tryAcquireDeviceById(
      int id, SyncPattern pattern = SyncPattern::Full,
      DeviceConnectionType connectionType = DeviceConnectionType::Always);

 private:
  DeviceManager() = default;
  std::shared_ptr<DeviceInfo> acquireAvailable(int numIpus, int tilesPerIPU,
                                               DeviceConnectionType connectionType,
                                               DeviceSelectionCriterion criterion,
                                               bool throwIfBusy);
  std::shared_ptr<DeviceInfo> acquireById(int id, DeviceConnectionType connectionType,
                                          bool throwIfBusy);
  std::shared_ptr<DeviceInfo> withTimeout(std::shared_ptr<DeviceInfo> device) const;
  std::mutex mutex_;          // guards the random engine
  uint64_t randomState_ = 0;  // 0: not seeded yet
  std::atomic<unsigned> attachTimeout_{0};
};

}  // namespace xtrain
