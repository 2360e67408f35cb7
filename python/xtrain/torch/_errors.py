"""PopTorch's error classes (``poptorch.Error``, ``RecoverableError``, ``UnrecoverableError``) and the
translation of xtrain's exceptions into them at the wrapper's boundary (docs/poptorch.md, "Errors").

xtrain's C++ errors reach Python as ``xtrain.popart_exception`` and its subclasses
(docs/python.md, "Errors"); a call of a wrapped model raises PopTorch's classes instead, with the
original as ``__cause__``. Errors found in Python (bad input) stay Python's own exceptions
(``ValueError``, ``TypeError``, ``NotImplementedError``), as PopTorch's Python layer raises them.
"""
import contextlib

from .. import _xtrain

# xtrain's RecoveryAction names -> PopTorch's recovery_action strings (POWER_CYCLE is its FULL_RESET).
_RECOVERY_ACTIONS = {"IPU_RESET": "IPU_RESET", "LINK_RESET": "LINK_RESET",
                     "PARTITION_RESET": "PARTITION_RESET", "POWER_CYCLE": "FULL_RESET"}


class Error(RuntimeError):
    """An error of xtrain's C++ library (PopTorch: detected in the C++ backend).

    message: the error's text; type: the xtrain exception class that raised it; location: where
    (xtrain's exceptions carry no source location, so the wrapper's operation, e.g. "run")."""

    def __init__(self, message, type="", location=""):
        super().__init__(message)
        self.message = message
        self.type = type
        self.location = location

    def __str__(self):
        return "%s (%s, in %s)" % (self.message, self.type, self.location) if self.type else \
            self.message


class RecoverableError(Error):
    """A transient fault; recovery_action says how to recover ("IPU_RESET", "LINK_RESET",
    "PARTITION_RESET" or "FULL_RESET")."""

    def __init__(self, message, type="", location="", recovery_action=""):
        super().__init__(message, type, location)
        self.recovery_action = recovery_action


class UnrecoverableError(Error):
    """A fault that persists: the system needs taking out of service."""


def translate(exc, location):
    """PopTorch's class for one of xtrain's exceptions."""
    message = str(exc)
    kind = type(exc).__name__
    if isinstance(exc, _xtrain.poplar_recoverable_runtime_error):
        action = getattr(exc, "recoveryAction", None)
        name = action.name if action is not None else ""
        return RecoverableError(message, kind, location, _RECOVERY_ACTIONS.get(name, name))
    if isinstance(exc, _xtrain.poplar_unrecoverable_runtime_error):
        return UnrecoverableError(message, kind, location)
    return Error(message, kind, location)


@contextlib.contextmanager
def backend(location):
    """Runs a block that calls xtrain, raising PopTorch's classes for xtrain's exceptions."""
    try:
        yield
    except _xtrain.popart_exception as e:
        raise translate(e, location) from e
