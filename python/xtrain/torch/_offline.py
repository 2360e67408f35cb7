"""PopTorch's ``ConnectionType.Never``: compiling without attaching a device (docs/poptorch.md,
"Precompilation", compiling offline).

The session is built on an offline device of the IPUs the options need (xtrain's
``createOfflineIPUDevice``), whose ``prepareDevice`` compiles the program and checks that it fits
in memory, then refuses to run (xtrain's offline devices never attach). So compiling checks what a
compile checks (the capture, the session's graph, memory: an ``OutOfMemoryException`` is raised as
any compile error), ``compileAndExport`` writes its file, and a call, a weight copy or an attach is
a ``RuntimeError`` saying the model was compiled offline. ``poptorch.load`` of the file with
``edit_opts_fn`` setting another connection type (a run-time option) runs it.
"""
from .. import _xtrain
from ._options import ConnectionType


def is_offline(options):
    return options.connection_type == ConnectionType.Never


def device(num_ipus):
    return _xtrain.DeviceManager().createOfflineIPUDevice({"numIPUs": num_ipus})


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
        "compileAndExport it and poptorch.load the file with edit_opts_fn setting "
        "connectionType(ConnectionType.Always)" % what)
