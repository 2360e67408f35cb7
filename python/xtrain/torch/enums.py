"""PopTorch's ``poptorch.enums``: the enumerations of the options and annotations, in one module
(each is also a name of ``xtrain.torch`` itself, as in PopTorch)."""
import enum

from ._data import DataLoaderMode  # noqa: F401
from ._multiconv import MultiConvPlanType  # noqa: F401
from ._ops import MatMulSerializationMode  # noqa: F401
from ._option_groups import HalfFloatCastingBehavior  # noqa: F401
from ._options import ConnectionType, OutputMode, ReductionType  # noqa: F401
from ._strategies import AutoStage  # noqa: F401


class CommGroupType(enum.IntEnum):
    """How replicas are put in groups (PopTorch's and PopART's CommGroupType):
    ``All`` one group of every replica; ``Consecutive`` groups of consecutive replicas;
    ``Orthogonal`` groups whose members are (replicas / group size) apart; ``NoGrouping`` a group
    of its own for each replica."""
    All = 0
    Consecutive = 1
    Orthogonal = 2
    NoGrouping = 3


class VariableRetrievalMode(enum.IntEnum):
    """How many values of a grouped weight are read back (PopTorch's names)."""
    OnePerGroup = 0
    AllReduceReplicas = 1
    AllReplicas = 2
