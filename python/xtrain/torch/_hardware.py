"""PopTorch's ``ipuHardwareVersion()``, ``ipuHardwareIsAvailable(num_ipus)`` and
``Options.useOfflineIpuTarget(ipu_version)`` over xtrain's simulated IPUs (docs/poptorch.md,
"Precompilation").

xtrain's "hardware" is its pool of simulated IPUs (docs/devices.md): ``useIpuModel(False)``, the
default, takes IPUs from it as PopTorch attaches to physical ones. So hardware is available when
the pool has a device of that many IPUs, and its version is the pool's IPUs' (ipu2: Mk2, which
PopTorch reports as 2).
"""
from .. import _xtrain

# PopTorch's ipu_version numbers -> xtrain's ipuVersion option (createOfflineIPUDevice).
IPU_VERSIONS = {1: "ipu1", 2: "ipu2", 21: "ipu21"}


def _pool_devices(num_ipus):
    try:
        return _xtrain.DeviceManager().enumerateDevices(numIpus=num_ipus)
    except _xtrain.popart_exception:
        return []  # no device of that size (not a power of two, or larger than the pool)


def ipuHardwareIsAvailable(num_ipus=1):
    """True when xtrain's pool of simulated IPUs has a device of ``num_ipus`` IPUs (busy or not, as
    PopTorch does not check whether its IPUs are free)."""
    if isinstance(num_ipus, bool) or not isinstance(num_ipus, int) or num_ipus < 1:
        raise ValueError("ipuHardwareIsAvailable: num_ipus must be a positive int, got %r"
                         % (num_ipus,))
    return len(_pool_devices(num_ipus)) > 0


def ipuHardwareVersion():
    """The version of the pool's IPUs as PopTorch numbers them (2: Mk2, xtrain's ipu2); a
    RuntimeError when the pool has no IPU, as PopTorch fails without hardware."""
    devices = _pool_devices(1)
    if not devices:
        raise RuntimeError("ipuHardwareVersion: no IPU hardware available: xtrain's pool of "
                           "simulated IPUs is empty (XTRAIN_NUM_IPUS, docs/devices.md)")
    version = devices[0].version
    numbers = {name: number for number, name in IPU_VERSIONS.items()}
    return numbers.get(version, -1)  # -1: unknown, as PopTorch's


def offline_ipu_version(ipu_version):
    """useOfflineIpuTarget's argument checked: xtrain's ipuVersion for it."""
    if isinstance(ipu_version, bool) or ipu_version not in IPU_VERSIONS:
        raise ValueError("Options.useOfflineIpuTarget: ipu_version must be one of %s (1: Mk1, "
                         "2: Mk2, 21: Mk2 with FP8), got %r"
                         % (", ".join(map(str, IPU_VERSIONS)), ipu_version))
    return IPU_VERSIONS[ipu_version]
