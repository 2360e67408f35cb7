"""PopTorch's execution strategies: how blocks (_blocks.py) become pipeline stages on IPUs
(docs/poptorch.md, "Execution strategies").

``PipelinedExecution`` (the default when a module has blocks) and ``ShardedExecution`` map each
block to a ``Stage`` and each stage to an IPU of the replica, as PopTorch's stage managers do:

- with explicit stages (``PipelinedExecution("A", ["B", "C"], Stage("D").ipu(1))``) stage k is the
  k-th argument; every block the module starts must be in one, else an error names it;
- without (``PipelinedExecution()`` or ``PipelinedExecution(AutoStage.X)``), each block id gets a
  stage when it first starts: ``AutoStage.SameAsIpu`` (the default) its ipu_id (which it must
  have), ``AutoStage.AutoIncrement`` 1, 2, 3, ... in the order blocks start;
- a block runs on its stage's ``.ipu(n)`` if given, else its own ipu_id, else the stage's number.

Ops traced before any block starts are on IPU 0 in stage 0, as in PopTorch. ``Phase`` and the
phased strategies are refused: xtrain does not implement execution phases.
"""
import enum


class AutoStage(enum.IntEnum):
    """PopTorch's rule for numbering the stages of blocks without one."""
    SameAsIpu = 0
    AutoIncrement = 1


def _phases_refused(name):
    raise NotImplementedError(
        "poptorch.%s: execution phases (PopTorch's SerialPhasedExecution and "
        "ParallelPhasedExecution) are not implemented in xtrain, which refuses "
        "VirtualGraphMode::ExecutionPhases (docs/model-parallelism.md); use PipelinedExecution or "
        "ShardedExecution, or off-chip storage (Options.TensorLocations) to fit a large model"
        % name)


class Stage:
    """One or more blocks (by user_id) run on one IPU, as one pipeline stage."""

    def __init__(self, *block_ids):
        for b in block_ids:
            if not isinstance(b, str):
                raise TypeError("poptorch.Stage: block ids are strings (the blocks' user_id), got "
                                "%r" % (b,))
        if not block_ids:
            raise ValueError("poptorch.Stage: give the ids of the blocks the stage is made of")
        self._blocks = list(block_ids)
        self._stage_id = -1
        self._ipu = None

    @property
    def blocks(self):
        return list(self._blocks)

    def ipu(self, ipu):
        """Runs the stage on this IPU of the replica (over its blocks' ipu_id)."""
        if isinstance(ipu, bool) or not isinstance(ipu, int) or ipu < 0:
            raise ValueError("poptorch.Stage(%s).ipu: expected an int >= 0, got %r"
                             % (", ".join(map(repr, self._blocks)), ipu))
        self._ipu = ipu
        return self

    def __eq__(self, other):
        return isinstance(other, Stage) and (self._blocks, self._stage_id, self._ipu) == \
            (other._blocks, other._stage_id, other._ipu)

    def __repr__(self):
        return "Stage(%s)%s" % (", ".join(map(repr, self._blocks)),
                                "" if self._ipu is None else ".ipu(%d)" % self._ipu)


class Placement:
    """Where one block start runs: its stage and IPU, and the start (for messages)."""

    def __init__(self, stage, ipu, start):
        self.stage = stage
        self.ipu = ipu
        self.start = start


class PipelinedExecution:
    """Pipelines the blocks' stages over the micro-batches of each step (PopTorch's default
    strategy). Arguments: stages, block ids or lists of block ids (one stage each, in order), or a
    single AutoStage."""

    pipelined = True

    def __init__(self, *args):
        name = type(self).__name__
        self._auto_stage = AutoStage.SameAsIpu
        self._stages = []
        self._block_map = {}
        if len(args) == 1 and isinstance(args[0], AutoStage):
            self._auto_stage = args[0]
            return
        for stage_id, arg in enumerate(args):
            if isinstance(arg, Stage):
                stage = arg
            elif isinstance(arg, str):
                stage = Stage(arg)
            elif isinstance(arg, (list, tuple)):
                stage = Stage(*arg)
            else:
                raise TypeError("poptorch.%s: argument %d is %r; expected a poptorch.Stage, a "
                                "block id (str), a list of block ids, or a single "
                                "poptorch.AutoStage"
                                % (name, stage_id, arg))
            stage._stage_id = stage_id
            for block in stage.blocks:
                if block in self._block_map:
                    raise ValueError("poptorch.%s: block '%s' is in more than one stage"
                                     % (name, block))
                self._block_map[block] = stage
            self._stages.append(stage)

    def stage(self, block_id):
        """The Stage a block belongs to."""
        if block_id not in self._block_map:
            raise KeyError("poptorch.%s: unknown block '%s' (the stages name %s)"
                           % (type(self).__name__, block_id, sorted(self._block_map)))
        return self._block_map[block_id]

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __repr__(self):
        if not self._stages:
            return "%s(AutoStage.%s)" % (type(self).__name__, self._auto_stage.name)
        return "%s(%s)" % (type(self).__name__, ", ".join(map(repr, self._stages)))

    def place(self, starts):
        """[Placement] of the block starts of a capture (_blocks.BlockStart), in their order."""
        if self._block_map:
            return [self._place_explicit(s) for s in starts]
        auto_stages, next_id, placements = {}, 1, []
        for start in starts:
            if start.user_id not in auto_stages:
                if self._auto_stage == AutoStage.SameAsIpu:
                    if start.ipu_id is None:
                        raise ValueError(
                            "%s has no ipu_id, but %s numbers stages with AutoStage.SameAsIpu (a "
                            "block's stage is its IPU): give every block an ipu_id, or use "
                            "PipelinedExecution(poptorch.AutoStage.AutoIncrement) or explicit "
                            "stages" % (start.describe(), self._what()))
                    auto_stages[start.user_id] = start.ipu_id
                else:
                    auto_stages[start.user_id] = next_id
                    next_id += 1
            stage = auto_stages[start.user_id]
            placements.append(Placement(stage, start.ipu_id if start.ipu_id is not None else stage,
                                        start))
        return placements

    def _place_explicit(self, start):
        stage = self._block_map.get(start.user_id)
        if stage is None:
            raise ValueError(
                "%s is not in any stage of %r: when a strategy lists stages, every block the "
                "module starts must be in one (the blocks it names: %s)"
                % (start.describe(), self, ", ".join(repr(b) for b in self._block_map)))
        ipu = stage._ipu if stage._ipu is not None else (
            start.ipu_id if start.ipu_id is not None else stage._stage_id)
        return Placement(stage._stage_id, ipu, start)

    def _what(self):
        return "the execution strategy (%r%s)" % (
            self, ", the default when a module has blocks" if type(self) is PipelinedExecution
            and not self._stages else "")


class ShardedExecution(PipelinedExecution):
    """Runs each stage on its IPU, one after the other (no pipelining): the same arguments as
    PipelinedExecution."""

    pipelined = False


class Phase:
    """An execution phase (refused: xtrain has no execution phases)."""

    def __init__(self, *args):
        _phases_refused("Phase")


class SerialPhasedExecution:
    """Phased execution on one group of IPUs (refused: xtrain has no execution phases)."""

    def __init__(self, *args):
        _phases_refused("SerialPhasedExecution")


class ParallelPhasedExecution:
    """Phased execution on two groups of IPUs (refused: xtrain has no execution phases)."""

    def __init__(self, *args):
        _phases_refused("ParallelPhasedExecution")


STRATEGY_TYPES = (PipelinedExecution, ShardedExecution)
