"""Compile a network graph into the plan the engines execute.

Within a step, unit groups are computed in a topological order of the same-step (delay 0)
edges, ties broken by declaration order; delay-1 edges read the previous step's values and do
not constrain the order (the time convention of Gers, Schraudolph & Schmidhuber 2002, sec. 2,
in these terms).
Trainable connections are laid out in declaration order in one flat parameter vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from ..graph.build import NetworkGraph, build_graph
from ..graph.units import Connection, Unit
from ..spec import SpecDocument


@dataclass(frozen=True)
class ParameterSlot:
    """Where one trainable connection's weights sit in the flat parameter vector."""

    connection: str
    shape: tuple[int, ...]
    offset: int
    size: int


@dataclass(frozen=True)
class Plan:
    """Everything an engine needs: units, connections, step order, parameter layout."""

    name: str
    document: SpecDocument
    network: NetworkGraph
    execution_order: tuple[str, ...]
    parameters: tuple[ParameterSlot, ...]

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.network.units

    @property
    def connections(self) -> tuple[Connection, ...]:
        return self.network.connections

    @property
    def n_parameters(self) -> int:
        return sum(slot.size for slot in self.parameters)

    @property
    def n_inputs(self) -> int:
        return sum(unit.size for unit in self.units if unit.role == "input")

    @property
    def n_outputs(self) -> int:
        return sum(unit.size for unit in self.units if unit.role == "output")

    @cached_property
    def unit(self) -> dict[str, Unit]:
        return {unit.name: unit for unit in self.units}

    @cached_property
    def connection(self) -> dict[str, Connection]:
        return {connection.name: connection for connection in self.connections}

    @cached_property
    def incoming(self) -> dict[str, tuple[Connection, ...]]:
        """The connections into each computed unit group, in declaration order."""
        return {name: tuple(c for c in self.connections if c.target == name)
                for name in self.execution_order}

    @cached_property
    def delayed_sources(self) -> tuple[str, ...]:
        """Unit groups whose previous-step values must be kept."""
        read = {c.source for c in self.connections if c.delay > 0}
        return tuple(unit.name for unit in self.units if unit.name in read)


def compile_plan(document: SpecDocument) -> Plan:
    """Build the graph of a validated spec and compile its plan."""
    network = build_graph(document)
    # Given values (inputs, bias) first, then computed groups in declaration order.
    rank = {unit.name: (unit.computed, index) for index, unit in enumerate(network.units)}
    order = nx.lexicographical_topological_sort(network.same_step_graph(), key=rank.__getitem__)
    execution_order = tuple(name for name in order if network.unit(name).computed)
    slots, offset = [], 0
    for connection in network.connections:
        if connection.trainable:
            slots.append(ParameterSlot(connection.name, connection.shape, offset, connection.size))
            offset += connection.size
    return Plan(document.name, document, network, execution_order, tuple(slots))
