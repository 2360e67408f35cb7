"""PopTorch's environment variables (its user guide, "Environment variables"; docs/poptorch.md,
"Environment variables").

- ``POPTORCH_LOG_LEVEL``: PopTorch's level names, applied by ``setLogLevel`` when xtrain.torch is
  imported (after ``XTRAIN_LOG_LEVEL``, which xtrain's library read first, so PopTorch's wins).
- ``POPTORCH_IPU_MODEL``: ``Options()`` starts with ``useIpuModel(True)``.
- ``POPTORCH_WAIT_FOR_IPU``: acquiring IPUs from the pool waits for busy ones, with no limit, as
  PopTorch waits (``XTRAIN_WAIT_FOR_IPU`` is xtrain's own, bounded wait).
- ``POPTORCH_CACHE_DIR``: ``Options()`` starts with ``enableExecutableCaching(dir)``: accepted with
  no effect, as the option.
- ``POPLAR_ENGINE_OPTIONS`` (a JSON object, as Poplar reads it; PopTorch's chapter profiles with
  it): the session's ``engineOptions``, so ``autoReport.*`` writes xtrain's reports
  (docs/reports.md); xtrain checks the keys.

A switch is set when it is neither unset, empty nor ``0``, as PopTorch reads them.
"""
import json
import os
import time

from . import _hardware, _logging

_POLL_SECONDS = 0.05


def _switch(name):
    return os.environ.get(name, "0") not in ("", "0")


def use_ipu_model():
    return _switch("POPTORCH_IPU_MODEL")


def cache_dir():
    return os.environ.get("POPTORCH_CACHE_DIR") or None


def engine_options():
    """POPLAR_ENGINE_OPTIONS as engineOptions (strings; JSON's true/false as "true"/"false")."""
    text = os.environ.get("POPLAR_ENGINE_OPTIONS")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        value = e
    if not isinstance(value, dict):
        raise ValueError("POPLAR_ENGINE_OPTIONS=%r: expected a JSON object of options, such as "
                         "'{\"autoReport.all\":\"true\"}' (%s)" % (text, value))
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}


def apply_log_level():
    level = os.environ.get("POPTORCH_LOG_LEVEL")
    if not level:
        return
    try:
        _logging.setLogLevel(level)
    except ValueError as e:
        raise ValueError("POPTORCH_LOG_LEVEL=%r: %s" % (level, e)) from e


def acquire(manager, total, ipu_id=None):
    """The pool's device of total IPUs (or the device ipu_id): xtrain's acquire (which fails at
    once when busy, or waits XTRAIN_WAIT_FOR_IPU), or with POPTORCH_WAIT_FOR_IPU a poll until it is
    free. A device the pool does not have fails at once rather than waiting forever."""
    if not _switch("POPTORCH_WAIT_FOR_IPU"):
        if ipu_id is None:
            return manager.acquireAvailableDevice(total)
        return manager.acquireDeviceById(ipu_id)
    if ipu_id is None:
        try_acquire = lambda: manager.tryAcquireAvailableDevice(total)  # noqa: E731
        exists = _hardware.ipuHardwareIsAvailable(total)
        what = "device of %d IPUs" % total
    else:
        try_acquire = lambda: manager.tryAcquireDeviceById(ipu_id)  # noqa: E731
        exists = any(d.id == ipu_id for d in manager.enumerateDevices(numIpus=0))
        what = "device %d" % ipu_id
    if not exists:
        raise RuntimeError("POPTORCH_WAIT_FOR_IPU: xtrain's pool has no %s to wait for "
                           "(docs/devices.md)" % what)
    device = try_acquire()
    if device is None:
        _logging.logger.info("POPTORCH_WAIT_FOR_IPU: waiting for %s of the pool to be free", what)
        start = time.monotonic()
        while device is None:
            time.sleep(_POLL_SECONDS)
            device = try_acquire()
        _logging.logger.info("POPTORCH_WAIT_FOR_IPU: got %s after %.1f s", what,
                             time.monotonic() - start)
    return device
