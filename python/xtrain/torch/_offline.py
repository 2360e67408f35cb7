"""PopTorch's ``ConnectionType.Never``: compiling without attaching a device (docs/poptorch.md,
"Precompilation", compiling offline).

The session is built on an offline device of the IPUs the options need (xtrain's
``createOfflineIPUDevice``), whose ``prepareDevice`` compiles the program and checks that it fits
in memory, then refuses to run (xtrain's offline devices never attach). So compiling checks what a
compile checks (the capture, the session's graph, memory: an ``OutOfMemoryException`` is raised as
any compile error), ``compileAndExport`` writes its file, and a call, a weight copy or an attach is
a ``RuntimeError`` saying the model was compiled offline. ``poptorch.load`` of the file runs it:
loading turns ``Never`` into ``Always``, as PopTorch's does (``edit_opts_fn`` may set another).
"""
from .. import _xtrain
from ._options import ConnectionType


def is_offline(options):
    return options.connection_type == ConnectionType.Never


def device(options, num_ipus):
    """The offline device; useOfflineIpuTarget's IPU version (default: xtrain's, ipu2)."""
    if options.offline_ipu_version is not None and options.use_ipu_model:
        raise ValueError("Options.useOfflineIpuTarget and useIpuModel(True) (or POPTORCH_IPU_MODEL"
                         "=1) together: an offline target cannot be the IPU model, as in "
                         "PopTorch; choose one")
    settings = {"numIPUs": num_ipus}
    if options.offline_ipu_version is not None:
        settings["ipuVersion"] = options.offline_ipu_version
    return _xtrain.DeviceManager().createOfflineIPUDevice(settings)


def prepare(session, device_info):
    """Compiles on the offline device: its refusal to load the program is the expected end, any
    other error (memory, lowering) is the compile's."""
    try:
        session.prepareDevice(loadEngine=False)
    except _xtrain.OutOfMemoryException:
        raise
    except _xtrain.popart_exception as e:
        if "offline" not in str(e) or device_info.isAttached:
            raise


def refuse(what):
    raise RuntimeError(
        "cannot %s: the model was compiled with ConnectionType.Never (offline: no device is "
        "attached, as PopTorch's). Compile with ConnectionType.Always or OnDemand to run it, or "
        "compileAndExport it and poptorch.load the file (which runs with "
        "ConnectionType.Always)" % what)
