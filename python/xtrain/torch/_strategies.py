"""PopTorch's model-parallel annotations and execution strategies, as names that refuse to run.

``BeginBlock``, ``Block``, ``BlockFunction``, ``Stage``, ``AutoStage``, ``Phase``,
``PipelinedExecution`` and ``ShardedExecution`` place parts of a module on different IPUs of one
replica. xtrain.torch runs each replica on one IPU: these need the capture to carry each block's
IPU and pipeline stage into the exported graph (as virtualGraph and pipelineStage attributes) and
the model-parallel layer of issue 30 to run it. Until then each raises NotImplementedError saying
so, rather than silently running the whole model on one IPU.
"""
import enum


def _refuse(name):
    raise NotImplementedError(
        "poptorch.%s is not implemented in xtrain.torch yet: it places parts of a module on "
        "several IPUs of a replica, which needs the model-parallel layer (issue 30) and a capture "
        "that carries each block's IPU and stage into the graph; xtrain.torch runs each replica "
        "on one IPU" % name)


class AutoStage(enum.IntEnum):
    """PopTorch's rule for numbering the stages of blocks without one."""
    SameAsIpu = 0
    AutoIncrement = 1


class _Refused:
    def __init__(self, *args, **kwargs):
        _refuse(type(self).__name__)


class BeginBlock(_Refused):
    """Wraps a submodule so that it starts a block on another IPU (refused: see module)."""


class Block(_Refused):
    """A context manager opening a block (refused: see module)."""


class Stage(_Refused):
    """A pipeline stage made of blocks (refused: see module)."""


class Phase(_Refused):
    """An execution phase made of stages (refused: see module)."""


class PipelinedExecution(_Refused):
    """Pipelined execution of stages (refused: see module)."""


class ShardedExecution(_Refused):
    """Sharded (one IPU at a time) execution of stages (refused: see module)."""


def BlockFunction(*args, **kwargs):  # noqa: N802 - PopTorch's name
    """A decorator putting a function in a block (refused: see module)."""
    _refuse("BlockFunction")


STRATEGY_NAMES = ("BeginBlock", "Block", "BlockFunction", "Stage", "AutoStage", "Phase",
                  "PipelinedExecution", "ShardedExecution")
