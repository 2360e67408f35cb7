"""xtrain's stand-in for PopART's tests/integration/test_util.py (written for xtrain, not copied):
the few helpers the kept PopART integration tests use. Devices are xtrain's simulated IPU Models."""
import functools

import pytest

import xtrain as popart


def create_test_device(numIpus=1, opts=None, pattern=popart.SyncPattern.Full,
                       connectionType=popart.DeviceConnectionType.OnDemand,
                       selectionCriterion=popart.DeviceSelectionCriterion.Random,
                       tilesPerIPU=None):
    options = dict(opts or {})
    options["numIPUs"] = numIpus
    if tilesPerIPU is not None:
        options["tilesPerIPU"] = tilesPerIPU
    return popart.DeviceManager().createIpuModelDevice(options)


def requires_ipu(func):
    """Tests that need IPU hardware are skipped: xtrain's IPUs are simulated."""
    return pytest.mark.skip(reason="needs IPU hardware")(func)


def requires_ipu_model(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper
