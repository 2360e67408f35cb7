"""xtrain: replicated training with PopART's Python API.

Programs written for PopART run with ``import xtrain as popart``; the names, keyword arguments and
defaults are those of PopART's ``popart`` module (docs/python.md lists them and the few
differences).
"""
from ._xtrain import *  # noqa: F401,F403
from . import _xtrain

__version__ = getattr(_xtrain, "__version__", "0.1.0")
from .session import Session  # noqa: E402,F401  (PopXL-style, over an xtrain session)
