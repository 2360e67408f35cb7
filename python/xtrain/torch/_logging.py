"""PopTorch's ``setLogLevel`` and ``logger`` over xtrain's logging (docs/logging.md).

PopTorch's levels (its user guide, "Logging level"): OFF, ERR, WARN, INFO, DEBUG, TRACE and
TRACE_ALL. Each sets every xtrain module's level (``xtrain.setLogLevel("all", ...)``, as
``XTRAIN_LOG_LEVEL`` does) and the level of ``poptorch.logger``, the Python logger of the wrapper's
own messages. xtrain has no level below TRACE: TRACE_ALL is TRACE.
"""
import logging

from .. import _xtrain

# PopTorch's name -> (xtrain's level, Python's level)
_LEVELS = {
    "OFF": (_xtrain.LogLevel.OFF, logging.CRITICAL + 1),
    "ERR": (_xtrain.LogLevel.ERR, logging.ERROR),
    "WARN": (_xtrain.LogLevel.WARN, logging.WARNING),
    "INFO": (_xtrain.LogLevel.INFO, logging.INFO),
    "DEBUG": (_xtrain.LogLevel.DEBUG, logging.DEBUG),
    "TRACE": (_xtrain.LogLevel.TRACE, logging.DEBUG - 5),
    "TRACE_ALL": (_xtrain.LogLevel.TRACE, logging.DEBUG - 5),
}

logger = logging.getLogger("poptorch")


def setLogLevel(level):
    """PopTorch's ``poptorch.setLogLevel(level)``: level is one of PopTorch's names (a string,
    as PopTorch spells them: "OFF", "ERR", "WARN", "INFO", "DEBUG", "TRACE", "TRACE_ALL")."""
    if not isinstance(level, str) or level not in _LEVELS:
        raise ValueError("setLogLevel: unknown log level %r (expected one of %s)"
                         % (level, ", ".join(_LEVELS)))
    xtrain_level, python_level = _LEVELS[level]
    _xtrain.setLogLevel("all", xtrain_level)
    logger.setLevel(python_level)
