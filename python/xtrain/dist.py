"""xtrain.dist: PopDist's helpers for a program started by xrun (xtrain::dist).

The functions are those of the extension's submodule ``_xtrain.dist``; this file makes
``import xtrain.dist`` and ``from xtrain import dist`` work alike.
"""
from ._xtrain import dist as _dist

for _name in dir(_dist):
    if not _name.startswith("_"):
        globals()[_name] = getattr(_dist, _name)
del _name

__all__ = [n for n in dir(_dist) if not n.startswith("_")]
