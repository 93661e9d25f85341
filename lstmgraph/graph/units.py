"""The primitives every spec expands into: unit groups and (optionally gated) connections.

A memory block is not a primitive: it expands into seven unit groups (its *ports*) joined by
fixed one-to-one connections, three of them gated (the LSTM-g view of Monner & Reggia 2012):

    cell_input --(x input_gate)--> state --> squashed_state --(x output_gate)--> cell_output
    state(t-1) --(x forget_gate, the constant error carousel)--> state(t)

Every unit computes ``y = activation(net)``, ``net = sum over incoming connections c of
W_c @ (gate_c(t) * y_source(t - delay_c))``, where ``gate_c`` is 1 for an ungated connection
and gate unit k multiplies the k-th contiguous block of the source's units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..errors import SpecPath
from ..spec.models import ConnectionInit

Role = Literal[
    "input", "bias", "hidden", "gate", "output",
    "cell_input", "input_gate", "forget_gate", "output_gate",
    "state", "squashed_state", "cell_output",
]

#: Memory-block ports in the order they are listed (and preferred when steps are ordered).
MEMORY_PORTS: tuple[str, ...] = (
    "forget_gate", "input_gate", "cell_input", "state", "output_gate", "squashed_state", "cell_output")
#: The ports of a memory block that other groups may connect into.
MEMORY_TARGET_PORTS: tuple[str, ...] = ("cell_input", "input_gate", "forget_gate", "output_gate")
GATE_ROLES: frozenset[str] = frozenset({"gate", "input_gate", "forget_gate", "output_gate"})
#: Roles whose values are given rather than computed.
SOURCE_ONLY_ROLES: frozenset[str] = frozenset({"input", "bias"})
BIAS = "bias"


@dataclass(frozen=True)
class Unit:
    """A group of units that share a role and an activation function."""

    name: str
    role: Role
    size: int
    activation: str
    group: str
    spec_path: SpecPath
    #: For a memory block's ports, the block's (blocks, cells per block); None for other groups.
    memory_block: tuple[int, int] | None = None

    @property
    def computed(self) -> bool:
        return self.role not in SOURCE_ONLY_ROLES

    @property
    def is_gate(self) -> bool:
        return self.role in GATE_ROLES


@dataclass(frozen=True)
class Connection:
    """One weight matrix from a source unit group to a target unit group.

    ``pattern`` and ``gate_side`` name entries of `lstmgraph.program.registry`, which defines
    each one's weight shape and the products it adds.
    """

    name: str
    source: str
    target: str
    pattern: Literal["full", "one_to_one", "peephole"]
    delay: int
    gradient: bool
    trainable: bool
    init: ConnectionInit | None
    gate: str | None
    gate_complement: bool
    shape: tuple[int, ...]
    spec_path: SpecPath
    internal: bool = False
    gate_side: Literal["source", "target"] = "source"

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def is_cec(self) -> bool:
        """The constant error carousel: a state's own previous value fed back."""
        return self.internal and self.source == self.target
