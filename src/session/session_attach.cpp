// Whether a prepared session may use its device now. The replicas' buffers are the IPUs' memory:
// once the caller detaches the session's DeviceInfo, another DeviceInfo (another session, another
// process) may take the same IPUs, and two holders of one IPU would both run on it. So every call
// that reads or writes that memory (run, weightsFromHost, weightsToHost, modelToHost,
// broadcastWeights, updateOptimizerFromHost, the checkpoint calls) first checks that the device is
// still attached, as PopART's engine cannot run on a device it no longer holds:
// - DeviceConnectionType::OnDemand: attached again on demand (tryAttachUntilTimeout), as PopART
//   attaches an OnDemand device when it needs it; a runtime_error when the IPUs stay busy.
// - Always (and CPU, IPU-model devices): a runtime_error telling the caller to attach() again.
// The buffers stay the session's across the detach (a simulated IPU keeps no state of its own), so
// a session attached again goes on where it stopped.
#include <algorithm>
#include <string>

#include "device/ipu/device_infos.hpp"
#include "device/ipu/ipu_wait.hpp"
#include "session/session_impl.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

ReplicaRuntime& SessionImpl::requireAttached(const char* what) {
  requirePrepared(what);
  DeviceInfo& d = *config_.device;
  if (d.isAttached()) return *runtime_;
  if (d.getConnectionType() == DeviceConnectionType::OnDemand) {
    logging::devicex::debug("{}: device {} was detached; attaching it again on demand", what,
                            d.getId());
    if (d.tryAttachUntilTimeout()) return *runtime_;
    const std::string holders = device::whoHolds(d);
    throw runtime_error(
        "{}: device {} (DeviceConnectionType::OnDemand) was detached and could not be attached "
        "again: {} (waited {} s: DeviceManager::setOnDemandAttachTimeout / XTRAIN_WAIT_FOR_IPU)",
        what, d.getId(),
        holders.empty() ? std::string("its IPUs are in use by another process") : holders,
        std::max(static_cast<double>(d.getOnDemandAttachTimeout()), device::waitForIpuSeconds()));
  }
  const std::string holders = device::whoHolds(d);
  throw runtime_error(
      "{}: device {} is detached (DeviceInfo::detach() was called after the session attached "
      "it), so the session no longer holds its IPUs{}; call attach() on the device (false while "
      "another holder has the IPUs) and then {} again",
      what, d.getId(), holders.empty() ? std::string() : " (" + holders + ")", what);
}

}  // namespace xtrain::session
