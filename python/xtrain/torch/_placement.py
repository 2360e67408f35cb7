"""Carries the blocks of a capture into its ONNX graph, and the graph's placement into the session
(docs/poptorch.md, "Execution strategies").

``annotate`` gives every node of the captured graph the IPU and pipeline stage of its block, as
the node attributes xtrain's importer reads (``__ipu_number``, ``__pipeline_stage``: PopART's,
docs/model-parallelism.md). The block of a node is found from the tracing scopes in its name
(_blocks.py): nodes come in the order they were traced, and a node belongs to the block started
last before it, as PopTorch's "active block" rule has it. ``Layout`` reads the placement back from
a graph (just captured or read from a compileAndExport file) and checks it against the options
before a session is built, with errors naming what to change.
"""
import onnx
from onnx import helper

from ._blocks import SCOPE_PATTERN
from ._strategies import PipelinedExecution

IPU, STAGE = "__ipu_number", "__pipeline_stage"


def _starts_in(node):
    """The block starts whose scopes enclose the node, outermost first."""
    ids = []
    for segment in node.name.split("/"):
        match = SCOPE_PATTERN.match(segment)
        if match:
            ids.append(int(match.group(1)))
    return ids


def _is_constant(node):
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx")


def annotate(proto, starts, strategy, model_name):
    """Sets each node's IPU and stage from the block starts (_blocks.BlockStart) of its capture,
    placed by the strategy (None: PipelinedExecution(), PopTorch's default)."""
    strategy = strategy if strategy is not None else PipelinedExecution()
    placements = strategy.place(starts)
    current, enclosing, ended = None, set(), None
    where = {}  # stage -> {ipu: what put ops there}, for the checks below
    block_of = {}  # node index -> what put it there
    unscoped = []
    for index, node in enumerate(proto.graph.node):
        if _is_constant(node):  # a value, not an op: the importer makes it a constant tensor
            continue
        if not node.name.startswith("/"):
            # Made by an exporter pass, outside any tracing scope (a Cast, an Unsqueeze of a
            # shape): no evidence of where it was traced; placed by its neighbours below.
            unscoped.append(index)
            continue
        ids = _starts_in(node)
        top = max(ids) if ids else -1
        if top > (current if current is not None else -1):
            current, ended = top, None
            enclosing = {i for i in ids if starts[i].ends}
        elif current is not None and ended is None and not enclosing <= set(ids):
            ended = starts[min(enclosing - set(ids))]
        if ended is not None:
            raise ValueError(
                "%s: the op %s (%s) is traced after the end of %s, in no block: once a `with "
                "poptorch.Block` or a BlockFunction ends, every op must be in a block until the "
                "next one starts (PopTorch's rule; BeginBlock's blocks last until the next block "
                "starts)" % (model_name, node.name, node.op_type, ended.describe()))
        if current is None:
            stage, ipu, what = 0, 0, "the ops before the first block"
        else:
            p = placements[current]
            stage, ipu, what = p.stage, p.ipu, p.start.describe()
        where.setdefault(stage, {}).setdefault(ipu, what)
        block_of[index] = what
        _set(node, ipu, stage)
    _place_unscoped(proto, unscoped, block_of)
    dense = {stage: i for i, stage in enumerate(sorted(where))}
    _check_one_ipu_per_stage(model_name, where)
    for node in proto.graph.node:
        if not _is_constant(node):
            stage = next(a.i for a in node.attribute if a.name == STAGE)
            _set(node, next(a.i for a in node.attribute if a.name == IPU), dense[stage])
    if strategy.pipelined and len({ipu for ipus in where.values() for ipu in ipus}) > 1:
        _check_data_flow(proto, model_name, block_of)


def _placement_of(node):
    attrs = {a.name: a.i for a in node.attribute if a.name in (IPU, STAGE)}
    return (attrs[STAGE], attrs[IPU]) if IPU in attrs else None


def _place_unscoped(proto, unscoped, block_of):
    """An op outside every tracing scope runs with the latest stage among the placed ops whose
    outputs it reads (so it reads nothing from a later stage), else with the earliest among the
    placed ops that read its outputs, else on IPU 0 in stage 0; rounds until chains of such ops
    are placed."""
    nodes = proto.graph.node
    made_by = {out: i for i, n in enumerate(nodes) for out in n.output}
    read_by = {}
    for i, n in enumerate(nodes):
        for name in n.input:
            read_by.setdefault(name, []).append(i)
    todo = list(unscoped)
    while todo:
        still = []
        for index in todo:
            node = nodes[index]
            before = [made_by[n] for n in node.input if n in made_by and made_by[n] in block_of]
            after = [r for out in node.output for r in read_by.get(out, ()) if r in block_of]
            if before:
                source = max(before, key=lambda i: _placement_of(nodes[i]))
            elif after:
                source = min(after, key=lambda i: _placement_of(nodes[i]))
            else:
                still.append(index)
                continue
            stage, ipu = _placement_of(nodes[source])
            block_of[index] = block_of[source]
            _set(node, ipu, stage)
        if len(still) == len(todo):  # nothing placed around them: the default block
            for index in still:
                block_of[index] = "the ops before the first block"
                _set(nodes[index], 0, 0)
            break
        todo = still


def _set(node, ipu, stage):
    kept = [a for a in node.attribute if a.name not in (IPU, STAGE)]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(IPU, ipu),
                                  helper.make_attribute(STAGE, stage)])


def _check_one_ipu_per_stage(model_name, where):
    for stage, ipus in where.items():
        if len(ipus) > 1:
            raise ValueError(
                "%s: stage %d holds blocks on different IPUs (%s): a stage runs on one IPU; give "
                "the Stage an .ipu(n), or put the blocks in stages of their own"
                % (model_name, stage, "; ".join("%s on IPU %d" % (what, ipu)
                                                 for ipu, what in sorted(ipus.items()))))


def _check_data_flow(proto, model_name, block_of):
    """A pipeline stage may only read what it or an earlier stage makes."""
    made_by = {}
    for index, node in enumerate(proto.graph.node):
        if _is_constant(node):
            continue
        stage = next(a.i for a in node.attribute if a.name == STAGE)
        for name in node.input:
            producer = made_by.get(name)
            if producer is not None and producer[0] > stage:
                later, maker = producer
                raise ValueError(
                    "%s: %s (pipeline stage %d) reads '%s', made by %s in the later stage %d: the "
                    "stages of a PipelinedExecution must follow the data flow. With "
                    "AutoStage.SameAsIpu (the default) a block's stage is its IPU, so blocks that "
                    "return to an IPU need PipelinedExecution(poptorch.AutoStage.AutoIncrement) or "
                    "explicit stages in data-flow order; or use ShardedExecution"
                    % (model_name, block_of[index], stage, name, block_of[maker],
                       later))
        for name in node.output:
            made_by[name] = (stage, index)


class Layout:
    """The placement of a captured graph: the replica's IPUs and the pipeline's stages."""

    def __init__(self, proto):
        placed = {}
        for node in proto.graph.node:
            attrs = {a.name: a.i for a in node.attribute if a.name in (IPU, STAGE)}
            if IPU in attrs:
                placed.setdefault(attrs.get(STAGE, attrs[IPU]), set()).add(attrs[IPU])
        self.placed = bool(placed)
        self.used_ipus = sorted(set().union(*placed.values())) if placed else [0]
        self.ipus = self.used_ipus[-1] + 1
        # xtrain merges consecutive stages on one IPU (docs/pipelining.md), as PopTorch does.
        ipus_by_stage = [min(placed[s]) for s in sorted(placed)]
        self.stages = sum(1 for i, ipu in enumerate(ipus_by_stage)
                          if i == 0 or ipu != ipus_by_stage[i - 1])

    def ipus_per_replica(self, options):
        """The replica's IPUs: a power of two, as PopTorch reserves them (or rounded up to one
        with autoRoundNumIPUs)."""
        k = self.ipus
        if k & (k - 1) == 0:
            return k
        rounded = 1 << (k - 1).bit_length()
        if options.auto_round_num_ipus:
            return rounded
        raise ValueError(
            "the module's blocks use IPUs 0 to %d (%d IPUs per replica), which is not a power of "
            "two: PopTorch reserves IPUs in powers of two. Set Options.autoRoundNumIPUs(True) to "
            "reserve %d (the rest idle), or place the blocks on %d IPUs"
            % (k - 1, k, rounded, rounded >> 1 if rounded > 2 else 2))

    def pipelined(self, options):
        strategy = options.execution_strategy or PipelinedExecution()
        return strategy.pipelined and len(self.used_ipus) > 1

    def check(self, options, training):
        """The options a pipeline needs (PopTorch's and PopART's rules), before the session is
        built: gradient accumulation over 2 x stages - 1 micro-batches in training, and as many
        device iterations as stages in inference."""
        self.ipus_per_replica(options)
        if not self.pipelined(options):
            return
        n = self.stages
        if training:
            af = options.Training.gradient_accumulation
            need = 2 * n - 1
            if af < need:
                raise ValueError(
                    "PipelinedExecution over %d stages (IPUs %s) trains with gradient "
                    "accumulation: set Options.Training.gradientAccumulation(n) with n >= %d "
                    "(2 x %d stages - 1: the forward stages and their backward stages; it is %d), "
                    "or use ShardedExecution to run the IPUs one after the other"
                    % (n, self.used_ipus, need, n, af))
        elif options.device_iterations < n:
            raise ValueError(
                "PipelinedExecution over %d stages (IPUs %s) in inference: set "
                "Options.deviceIterations(n) with n >= %d (the pipeline's stages; it is %d), or "
                "use ShardedExecution" % (n, self.used_ipus, n, options.device_iterations))


def placed_layout(proto):
    """The Layout of a graph whose nodes carry an IPU, else None."""
    layout = Layout(proto if isinstance(proto, onnx.ModelProto) else onnx.load_from_string(proto))
    return layout if layout.placed else None
