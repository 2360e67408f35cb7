"""PopTorch's replica grouping: ``wrapped.W.replicaGrouping(...)`` for weights and
``Options.inputReplicaGrouping(...)`` for inputs (docs/poptorch.md, "Replica grouping").

A grouped weight holds one value per group of replicas: the module's parameter is all of them,
stacked along a first dimension of one entry per group, and each replica's graph sees its group's
entry. The capture traces ``forward`` with the first group's entry in the parameter's place (as
PopTorch does), then puts every group's value in the graph's initializer and writes the grouping
as the model metadata xtrain's importer reads (``__comm_group_type/<id>``,
``__comm_group_size/<id>``, ``__variable_settings/<id>``: docs/replica-grouping.md,
docs/replication-semantics.md section 4).

Grouped inputs: with ``inputReplicaGrouping(k, type)`` the replicas of one group of k get the same
micro-batches, so a call takes replicas / k micro-batches per device iteration and accumulation
step; the executor hands each replica its group's (``expand_grouped_inputs``).
"""
import contextlib

import numpy as np
import torch
from onnx import helper, numpy_helper

from .enums import CommGroupType, VariableRetrievalMode


class Grouping:
    """One weight's grouping: PopTorch's (comm_group_type, shards, variable_retrieval_mode)."""

    def __init__(self, name, comm_group_type, shards, mode):
        if not isinstance(comm_group_type, CommGroupType):
            raise TypeError("%s.replicaGrouping: expected a poptorch.enums.CommGroupType, got %r"
                            % (name, comm_group_type))
        # PopTorch ignores shards for All and NoGrouping (its own test passes 0 with NoGrouping).
        if comm_group_type in (CommGroupType.Consecutive, CommGroupType.Orthogonal) and (
                isinstance(shards, bool) or not isinstance(shards, int) or shards < 1):
            raise ValueError("%s.replicaGrouping: shards (the replicas in a group) must be an int "
                             ">= 1 for CommGroupType.%s, got %r"
                             % (name, comm_group_type.name, shards))
        if not isinstance(mode, VariableRetrievalMode):
            raise TypeError("%s.replicaGrouping: expected a poptorch.enums.VariableRetrievalMode, "
                            "got %r" % (name, mode))
        if mode == VariableRetrievalMode.AllReduceReplicas:
            raise NotImplementedError(
                "%s.replicaGrouping(..., VariableRetrievalMode.AllReduceReplicas): PopART does "
                "not support it, nor does xtrain (use OnePerGroup or AllReplicas)" % name)
        self.name = name
        self.type = comm_group_type
        self.shards = shards
        self.mode = mode

    def groups(self, replicas):
        """The number of groups over `replicas` replicas (a ValueError when they do not divide)."""
        if self.type == CommGroupType.All:
            return 1
        if self.type == CommGroupType.NoGrouping:
            return replicas
        if replicas % self.shards:
            raise ValueError("%s.replicaGrouping(CommGroupType.%s, %d): groups of %d replicas do "
                             "not divide the %d replicas (Options.replicationFactor)"
                             % (self.name, self.type.name, self.shards, self.shards, replicas))
        return replicas // self.shards

    def metadata(self):
        size = {CommGroupType.All: 0, CommGroupType.NoGrouping: 1}.get(self.type, self.shards)
        kind = "Ungrouped" if self.type == CommGroupType.NoGrouping else self.type.name
        # AllReplicas reads one value per replica, but the module's parameter holds one per group
        # (PopTorch's too: it is given [groups, ...]), and the replicas of a group hold the same
        # value (their gradients are reduced over the group), so the session reads one per group
        # either way: nothing is lost, and with one replica a group the two are the same.
        return {"__comm_group_type/" + self.name: kind,
                "__comm_group_size/" + self.name: str(size),
                "__variable_settings/" + self.name: VariableRetrievalMode.OnePerGroup.name}


class ParameterHandle:
    """What ``wrapped.W`` returns for a parameter W of the module (as PopTorch's wrapper does): the
    parameter's attributes, and ``replicaGrouping``."""

    def __init__(self, executor, name, parameter):
        self._executor = executor
        self._name = name
        self._parameter = parameter

    def replicaGrouping(self, comm_group_type, shards, variable_retrieval_mode):  # noqa: N802
        executor = self._executor
        if executor._session is not None:
            raise RuntimeError("%s.replicaGrouping: the model is already compiled; call it before "
                               "the first call (or destroy() first)" % self._name)
        grouping = Grouping(self._name, comm_group_type, shards, variable_retrieval_mode)
        groups = grouping.groups(executor.options.replication_factor)
        shape = tuple(self._parameter.shape)
        if groups > 1 and (not shape or shape[0] != groups):
            raise ValueError("%s.replicaGrouping: the parameter has shape %s; with %d groups of "
                             "replicas its first dimension must be %d (one value per group)"
                             % (self._name, shape, groups, groups))
        executor._per_replica[self._name] = grouping

    def __getattr__(self, name):
        return getattr(self._parameter, name)


@contextlib.contextmanager
def first_group_in_place(model, groupings, replicas):
    """Runs a block with each grouped parameter replaced by its first group's entry (what one
    replica computes with), restoring the parameter objects afterwards."""
    saved = []
    try:
        for name, grouping in groupings.items():
            if grouping.groups(replicas) == 1:
                continue
            owner, leaf = _owner(model, name)
            parameter = getattr(owner, leaf)
            saved.append((owner, leaf, parameter))
            replica_value = parameter.detach()[0].clone()
            owner._parameters[leaf] = torch.nn.Parameter(replica_value,
                                                         requires_grad=parameter.requires_grad)
        yield
    finally:
        for owner, leaf, parameter in saved:
            owner._parameters[leaf] = parameter


def _owner(model, name):
    *path, leaf = name.split(".")
    owner = model
    for part in path:
        owner = getattr(owner, part)
    if leaf not in owner._parameters:
        raise ValueError("replicaGrouping: '%s' is not a parameter of %s"
                         % (name, type(model).__name__))
    return owner, leaf


def write_groupings(proto, model, groupings, replicas):
    """Puts every group's value of the grouped weights in the graph and their grouping in its
    metadata."""
    state = model.state_dict()
    by_name = {i.name: i for i in proto.graph.initializer}
    entries = {p.key: p for p in proto.metadata_props}
    for name, grouping in groupings.items():
        if name not in by_name:
            raise ValueError("replicaGrouping: '%s' is not a weight the captured graph trains "
                             "(unused by forward, or frozen)" % name)
        if grouping.groups(replicas) > 1:
            full = state[name].detach().cpu().contiguous().numpy()
            by_name[name].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(full), name))
        for key, value in grouping.metadata().items():
            if key in entries:
                entries[key].value = value
            else:
                entry = proto.metadata_props.add()
                entry.key, entry.value = key, value


def input_groups(options):
    """For each replica, the index of its input group among the call's replicas / k (None when
    inputs are not grouped)."""
    k, replicas = options.input_group_size, options.replication_factor
    if k == 1:
        return None
    if options.input_group_type == CommGroupType.Orthogonal:
        return [r % (replicas // k) for r in range(replicas)]
    return [r // k for r in range(replicas)]


def expand_grouped_inputs(array, groups, options, training):
    """A call's input of [calls x replicas / k x micro-batch] rows as the session's
    [calls x replicas x micro-batch]: each replica's rows are its input group's."""
    steps = options.device_iterations * (options.Training.gradient_accumulation if training else 1)
    grouped = array.reshape((steps, options.replication_factor // options.input_group_size, -1)
                            + array.shape[1:])
    return np.ascontiguousarray(grouped[:, groups]).reshape((-1,) + array.shape[1:])


def grouped_names(proto):
    """The tensors the graph's metadata groups over replicas."""
    prefix = "__comm_group_type/"
    return [p.key[len(prefix):] for p in proto.metadata_props if p.key.startswith(prefix)]


# PopTorch's Mean reduction divides every weight's gradient by all the micro-batches of a step
# (accumulation x replicas), a grouped weight's too, so that grouped weights and inputs train as the
# whole problem would (PopTorch's test of its listing compares them with the CPU). xtrain's Mean
# divides a grouped weight's by its own group's micro-batches (docs/replication-semantics.md
# section 2). So with grouped weights the session reduces by Sum and trains on this loss: the
# graph's loss over accumulation x replicas (the loss output itself is unchanged).
SCALED_LOSS = "__xtrain_loss_over_all_micro_batches"


def scale_loss_for_mean(proto, options, groupings):
    """Adds SCALED_LOSS to a training graph with grouped weights under PopTorch's Mean reduction."""
    from ._options import ReductionType
    replicas = options.replication_factor
    if options.Training.reduction != ReductionType.Mean or not any(
            1 < g.groups(replicas) for g in groupings.values()):
        return
    scale = 1.0 / (options.Training.gradient_accumulation * replicas)
    made_by = next(n for n in proto.graph.node if "loss" in n.output)
    placement = [a for a in made_by.attribute if a.name in ("__ipu_number", "__pipeline_stage")]
    constant = helper.make_node("Constant", [], [SCALED_LOSS + "/scale"],
                                value=numpy_helper.from_array(np.array(scale, np.float32)))
    scaled = helper.make_node("Mul", ["loss", SCALED_LOSS + "/scale"], [SCALED_LOSS],
                              name=SCALED_LOSS)
    scaled.attribute.extend(placement)
    proto.graph.node.extend([constant, scaled])


def training_loss(proto):
    """The tensor a TrainingSession of the graph trains on."""
    return SCALED_LOSS if any(n.name == SCALED_LOSS for n in proto.graph.node) else "loss"
