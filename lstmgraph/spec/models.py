"""The spec language: pydantic models of a network spec (version 1).

A spec declares unit *groups* and the *connections* between them. Groups are inputs, hidden
units, gates, outputs, and memory blocks; a memory block is shorthand for cell inputs, gates,
cell states with their constant error carousel, squashed states and cell outputs, addressed
as ports (``mem.input_gate``, ``mem.state``, ...). Unknown keys are rejected everywhere.
The field reference with examples is docs/spec.md.
"""

from __future__ import annotations

import math

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator,
                      model_validator)

from ..operations import ALIASES, OUTPUT_ACTIVATIONS, UNIT_ACTIVATIONS, OutputActivation, UnitActivation
from ..limits import (COUNT_LIMITS_HINT, MAX_EPOCHS, MAX_GROUP_SIZE, MAX_NAME_LENGTH, MAX_STEPS, NAME_PATTERN,
                      check_task_integers, shown_count)

SPEC_VERSION = 1

Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
Size = Annotated[int, Field(strict=True, gt=0)]
#: The number of units of a group (limits.py bounds it).
Units = Annotated[int, Field(strict=True, gt=0, le=MAX_GROUP_SIZE)]
#: A network's name; it becomes part of the default run directory's name.
NetworkName = Annotated[str, Field(pattern=NAME_PATTERN, max_length=MAX_NAME_LENGTH)]
Real = Annotated[float, Field(strict=True, allow_inf_nan=False)]
GateName = Literal["input", "forget", "output"]


def _symmetric_range(value: Any) -> Any:
    """``0.1`` means the range ``[-0.1, 0.1]``; a pair is taken as ``[low, high]``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"a half-width must not be negative, got {value}")
        return (-value, value)
    if isinstance(value, (list, tuple)) and len(value) != 2:
        raise ValueError(f"a range is a half-width or a [low, high] pair, got {len(value)} numbers")
    return value


def _activation_name(value: Any) -> Any:
    """An alias such as ``sigmoid`` becomes its own name (``logistic``): later stages see one name."""
    return ALIASES.get(value, value) if isinstance(value, str) else value


def _activation(names: tuple[str, ...]) -> WithJsonSchema:
    """The schema of an activation field: its names and the aliases of those names."""
    aliases = [alias for alias, name in ALIASES.items() if name in names]
    return WithJsonSchema({"type": "string", "enum": [*names, *aliases]})


def _as_list(value: Any) -> Any:
    """A single source or target may be written as a plain string."""
    return [value] if isinstance(value, str) else value


UnitActivationName = Annotated[UnitActivation, BeforeValidator(_activation_name),
                               _activation(UNIT_ACTIVATIONS)]
OutputActivationName = Annotated[OutputActivation, BeforeValidator(_activation_name),
                                 _activation(OUTPUT_ACTIVATIONS)]
Range = Annotated[tuple[Real, Real], BeforeValidator(_symmetric_range), WithJsonSchema({
    "anyOf": [{"type": "number", "minimum": 0, "description": "half-width w: the range [-w, w]"},
              {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
               "description": "[low, high]"}]})]
#: One unit reference or a list of them.
Names = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_as_list), Field(min_length=1),
                  WithJsonSchema({"anyOf": [{"type": "string", "minLength": 1},
                                            {"type": "array", "items": {"type": "string", "minLength": 1},
                                             "minItems": 1}]})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _check_range(bounds: tuple[float, float] | None) -> None:
    if bounds is not None and bounds[0] > bounds[1]:
        raise ValueError(f"the range's lower bound {bounds[0]} is above its upper bound {bounds[1]}")
    if bounds is not None and not math.isfinite(bounds[1] - bounds[0]):
        raise ValueError(f"the range [{bounds[0]}, {bounds[1]}] is wider than a float holds (its width overflows); "
                         "give bounds of a sensible size, e.g. 0.1")


# ---------------------------------------------------------------------------------------------
# Unit groups
# ---------------------------------------------------------------------------------------------

class InputGroup(_Model):
    """External input units; their values are given at every step."""

    kind: Literal["input"]
    name: Name
    size: Units


class HiddenGroup(_Model):
    """Conventional units: activation(sum of incoming connections)."""

    kind: Literal["hidden"]
    name: Name
    size: Units
    activation: UnitActivationName = "logistic"


class GateGroup(_Model):
    """Units whose activations multiply connections that name them in ``gated_by`` (LSTM-g)."""

    kind: Literal["gate"]
    name: Name
    size: Units
    activation: UnitActivationName = "logistic"


class OutputGroup(_Model):
    """Output units, compared with the targets."""

    kind: Literal["output"]
    name: Name
    size: Units
    activation: OutputActivationName = "logistic"

    @model_validator(mode="after")
    def _softmax_over_units(self) -> "OutputGroup":
        if self.activation == "softmax" and self.size == 1:
            raise ValueError("a softmax over one unit is always 1, so no weight before it would learn; "
                             "use logistic for one output, or give the group a unit per class")
        return self


class MemoryBlockGroup(_Model):
    """``blocks`` memory blocks of ``cells_per_block`` cells sharing one gate of each kind.

    Defaults reproduce Hochreiter & Schmidhuber 1997: input and output gates, g = 4 sigma - 2,
    h = 2 sigma - 1. Add ``forget`` to ``gates`` for Gers et al. 2000.
    """

    kind: Literal["memory_block"]
    name: Name
    blocks: Units
    cells_per_block: Units = 1
    gates: list[GateName] = Field(default_factory=lambda: ["input", "output"])
    cell_input_activation: UnitActivationName = "four_logistic_minus_two"
    cell_output_activation: UnitActivationName = "two_logistic_minus_one"
    gate_activation: UnitActivationName = "logistic"
    # Weight of the cell state's fixed self-connection (the CEC): 1 in the papers; below 1 it is
    # the 2000 paper's "state decay" baseline, s(t) = decay * s(t-1) + input (Table 2: 0.9).
    state_decay: float = Field(default=1.0, gt=0.0, le=1.0)

    @model_validator(mode="after")
    def _gates_once(self) -> "MemoryBlockGroup":
        repeated = sorted({gate for gate in self.gates if self.gates.count(gate) > 1})
        if repeated:
            raise ValueError(f"gates listed more than once: {', '.join(repeated)}")
        return self


Group = Annotated[
    Union[InputGroup, HiddenGroup, GateGroup, OutputGroup, MemoryBlockGroup],
    Field(discriminator="kind"),
]

# ---------------------------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------------------------

class ConnectionInit(_Model):
    """How one connection's weights start: exactly one of ``uniform``, ``constant``, ``values``."""

    uniform: Range | None = None
    constant: Real | None = None
    values: list[Real] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _exactly_one(self) -> "ConnectionInit":
        given = [key for key in ("uniform", "constant", "values") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of uniform, constant or values"
                             + (f" (got {', '.join(given)})" if given else ""))
        _check_range(self.uniform)
        return self


Pattern = Literal["full", "one_to_one", "peephole"]


class ConnectionSpec(_Model):
    """Weighted connections from one or more sources to one or more targets.

    Each (source, target) pair becomes its own weight matrix named ``source->target``.
    ``delay`` 0 reads the source's value of the same step, 1 the previous step's.
    ``gradient`` says whether error flows back along the edge; left out, it follows the 1997
    truncation (docs/spec.md): same-step edges carry gradient, previous-step edges and
    peepholes do not.
    """

    source: Names = Field(alias="from")
    to: Names
    name: str | None = Field(default=None, pattern=r"^[^/\s>]+$")  # (no '->': a pair FROM->TO is named so)
    pattern: Pattern = "full"
    delay: Annotated[int, Field(strict=True, ge=0, le=1)] | None = None
    gradient: Annotated[bool, Field(strict=True)] | None = None
    trainable: Annotated[bool, Field(strict=True)] = True
    init: ConnectionInit | None = None
    gated_by: str | None = Field(default=None, min_length=1)
    gate_complement: Annotated[bool, Field(strict=True)] = False
    gate_side: Literal["source", "target"] = "source"

    @model_validator(mode="after")
    def _name_needs_single_target(self) -> "ConnectionSpec":
        if self.name is not None and len(self.to) * len(self.source) != 1:
            raise ValueError("'name' can only be given to a connection with one source and one target")
        if self.gate_complement and self.gated_by is None:
            raise ValueError("gate_complement needs gated_by")
        if self.gate_side != "source" and self.gated_by is None:
            raise ValueError("gate_side needs gated_by")
        return self


class InitDefaults(_Model):
    """Default initialisation: weights uniform in ``uniform`` (a half-width or a [low, high] pair)."""

    uniform: Range = (-0.1, 0.1)
    seed: Annotated[int, Field(strict=True, ge=0)] = 0

    @model_validator(mode="after")
    def _ordered(self) -> "InitDefaults":
        _check_range(self.uniform)
        return self


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------

class LearningRateDecay(_Model):
    """How the learning rate changes: ``multiplicative`` (times ``factor`` after every step or
    sequence, the 2000 paper's decay) or ``inverse_time`` (learning_rate / (1 + n / tau) after
    the n-th step or sequence, tau the ``time_constant``, 1 by default: alpha / t from t = 1)."""

    kind: Literal["none", "multiplicative", "inverse_time"] = "none"
    factor: Annotated[float, Field(strict=True, gt=0, le=1)] | None = None
    time_constant: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] | None = None
    every: Literal["step", "sequence"] = "sequence"

    @model_validator(mode="after")
    def _factor_for_multiplicative(self) -> "LearningRateDecay":
        if self.kind == "multiplicative" and self.factor is None:
            raise ValueError("multiplicative decay needs a factor, e.g. factor: 0.99")
        if self.kind != "multiplicative" and self.factor is not None:
            raise ValueError(f"factor applies to multiplicative decay only, not {self.kind}")
        if self.kind != "inverse_time" and self.time_constant is not None:
            raise ValueError(f"time_constant applies to inverse_time decay only, not {self.kind}")
        return self


class OptimizerSpec(_Model):
    """The update rule: ``sgd`` (momentum SGD, the papers' rule and the default) or ``adam``
    (Kingma & Ba 2015) with its decay rates ``beta1``, ``beta2`` and ``epsilon``."""

    name: Literal["sgd", "adam"] = "sgd"
    beta1: Annotated[float, Field(strict=True, ge=0, lt=1)] | None = None
    beta2: Annotated[float, Field(strict=True, ge=0, lt=1)] | None = None
    epsilon: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _adam_options_for_adam(self) -> "OptimizerSpec":
        given = [key for key in ("beta1", "beta2", "epsilon") if getattr(self, key) is not None]
        if self.name != "adam" and given:
            raise ValueError(f"{', '.join(given)} apply to name: adam only; sgd takes "
                             f"training.momentum")
        return self

    @property
    def adam(self) -> tuple[float, float, float]:
        """(beta1, beta2, epsilon) with the usual defaults 0.9, 0.999, 1e-8."""
        return (0.9 if self.beta1 is None else self.beta1, 0.999 if self.beta2 is None else self.beta2,
                1e-8 if self.epsilon is None else self.epsilon)


class TaskSpec(BaseModel):
    """A built-in task by name, with its options as further keys (checked by the task; integers
    bounded here, for every task, as they size the sequences)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str = Field(min_length=1)

    @model_validator(mode="after")
    def _bounded_integers(self) -> "TaskSpec":
        check_task_integers(self.options)
        return self

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


#: The learning rules a network trains by (training.learning_rule, `train --rule`, the sweep key).
LearningRule = Literal["truncated_rtrl", "rtrl", "bptt"]
LEARNING_RULES: tuple[str, ...] = get_args(LearningRule)


class TrainingSpec(_Model):
    """How `lstmgraph train` trains the network (docs/spec.md, "training")."""

    learning_rule: LearningRule = "truncated_rtrl"
    bptt_window: Size | None = None
    update: Literal["online", "sequence"] | None = None
    loss: Literal["sum_of_squares", "cross_entropy"] = "sum_of_squares"
    learning_rate: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
    momentum: Annotated[float, Field(strict=True, ge=0, lt=1)] = 0.0
    learning_rate_decay: LearningRateDecay = Field(default_factory=LearningRateDecay)
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec)
    clip_norm: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] | None = None
    reset: Literal["sequence", "never"] | None = None
    task: TaskSpec | None = None
    data: str | None = None
    steps: Size | None = None
    epochs: Size | None = None
    stop_loss: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] | None = None
    stop_window: Size = 100
    checkpoint_every: Size = 10000
    seed: Annotated[int, Field(strict=True, ge=0)] | None = None

    @field_validator("steps", "epochs")
    @classmethod
    def _within_limits(cls, value: int | None, info) -> int | None:
        """A run's length within `MAX_STEPS` / `MAX_EPOCHS`, checked with the spec (`validate`
        refuses what `train` would)."""
        limit, what = (MAX_STEPS, "steps") if info.field_name == "steps" else (MAX_EPOCHS, "passes over the data")
        if value is not None and value > limit:
            raise ValueError(f"{shown_count(value)} {what}, more than the limit of {limit:,} "
                             f"({COUNT_LIMITS_HINT}); give a shorter run")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "TrainingSpec":
        if (self.task is None) == (self.data is None):
            raise ValueError("give exactly one of task (a built-in task) or data (an .npz file)")
        if self.learning_rule == "bptt" and self.update == "online":
            raise ValueError("bptt updates after each window or sequence; set bptt_window: 1 "
                             "or more for updates within a sequence")
        if self.bptt_window is not None and self.learning_rule != "bptt":
            raise ValueError("bptt_window applies to learning_rule: bptt only")
        if self.epochs is not None and self.data is None:
            raise ValueError("epochs count passes over a data file; a task runs for steps")
        if self.optimizer.name != "sgd" and self.momentum:
            raise ValueError("momentum applies to the sgd optimizer; adam has optimizer.beta1")
        if self.update_mode == "online" and (self.optimizer.name != "sgd" or self.clip_norm is not None):
            raise ValueError("optimizer adam and clip_norm apply to per-sequence or per-window "
                             "updates (update: sequence, or learning_rule: bptt); online updates "
                             "use momentum SGD, the papers' rule")
        return self

    @property
    def update_mode(self) -> str:
        return self.update or ("sequence" if self.learning_rule == "bptt" else "online")


class NetworkSpec(_Model):
    """A whole network spec file."""

    schema_reference: str | None = Field(default=None, alias="$schema",
                                         description="optional: where editors find this schema")
    version: Annotated[int, Field(strict=True)]
    name: NetworkName | None = None
    description: str | None = None
    groups: list[Group] = Field(min_length=1)
    connections: list[ConnectionSpec] = Field(default_factory=list)
    init: InitDefaults = Field(default_factory=InitDefaults)
    training: TrainingSpec | None = None

    @field_validator("version")
    @classmethod
    def _supported_version(cls, version: int) -> int:
        if version != SPEC_VERSION:
            raise ValueError(f"unsupported spec version {version}; this lstmgraph reads version {SPEC_VERSION}")
        return version
