"""Compile a network graph into the plan the engines execute.

Within a step, unit groups are computed in a topological order of the same-step (delay 0)
edges, ties broken by declaration order; delay-1 edges read the previous step's values and do
not constrain the order (the time convention of Gers, Schraudolph & Schmidhuber 2002, sec. 2,
in these terms).
Trainable connections are laid out in declaration order in one flat parameter vector.

The plan also carries the spec's settings, resolved here, so that nothing downstream reads the
spec document: the default initialisation, the training section (a data file's path joined to
the spec's folder, the data seed defaulting to ``init.seed``), where the spec came from (for
error messages) and the resolved spec as plain data (what a run directory keeps as spec.yaml).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx

from ..errors import SpecSource
from ..graph.build import NetworkGraph, build_graph
from ..graph.units import Connection, Unit
from ..spec import SpecDocument
from ..spec.models import InitDefaults, TaskSpec, TrainingSpec
from ..tasks.data_file import beside, spec_relative


@dataclass(frozen=True)
class ParameterSlot:
    """Where one trainable connection's weights sit in the flat parameter vector."""

    connection: str
    shape: tuple[int, ...]
    offset: int
    size: int


@dataclass(frozen=True)
class Plan:
    """Everything an engine needs: units, connections, step order, parameter layout, and the
    spec's settings resolved (``init``, ``training``), where the spec came from (``source``,
    for error messages) and the resolved spec (``resolved_spec``: plain data, a copy each time)."""

    name: str
    network: NetworkGraph
    execution_order: tuple[str, ...]
    parameters: tuple[ParameterSlot, ...]
    source: SpecSource
    #: The default initialisation: weights uniform in ``init.uniform``, trial seeds from ``init.seed``.
    init: InitDefaults
    #: The training section (None if the spec has none), with ``data`` joined to the spec's
    #: folder and ``seed`` defaulting to ``init.seed``.
    training: TrainingSpec | None
    #: The spec as JSON text: defaults filled in, a task's options kept, a data file's path
    #: absolute (`resolved_spec`). Text, so that no caller can change what a run writes.
    resolved_json: str

    @property
    def resolved_spec(self) -> dict[str, Any]:
        """The resolved spec as plain data, a fresh copy at each call (change it at will): a
        run directory's spec.yaml."""
        return json.loads(self.resolved_json)

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
    def unlearned_connections(self) -> tuple[str, ...]:
        """Trainable connections whose weights never change under the training section's
        learning rule (`unreached_connections`; every connection carries under exact ``rtrl``)."""
        return self.unreached_connections(self.training is not None and self.training.learning_rule == "rtrl")

    def unreached_connections(self, full_gradient: bool) -> tuple[str, ...]:
        """Trainable connections whose target no output's error reaches. Error flows back along
        the connections that carry gradient (every one with ``full_gradient``; else as the flags
        say) and from a gated target to its gate, so a group read only through a truncated delay
        (the 1997 default) learns nothing, nor do the groups that feed only it; nor, under any
        rule, a group no output reads."""
        error_paths = nx.DiGraph()
        error_paths.add_nodes_from(unit.name for unit in self.units)
        for c in self.connections:
            if full_gradient or c.gradient:
                error_paths.add_edge(c.source, c.target)
            if c.gate:
                error_paths.add_edge(c.gate, c.target)
        outputs = [unit.name for unit in self.units if unit.role == "output"]
        reached = set(outputs).union(*(nx.ancestors(error_paths, name) for name in outputs))
        return tuple(c.name for c in self.connections if c.trainable and c.target not in reached)

    @cached_property
    def delayed_sources(self) -> tuple[str, ...]:
        """Unit groups whose previous-step values must be kept."""
        read = {c.source for c in self.connections if c.delay > 0}
        return tuple(unit.name for unit in self.units if unit.name in read)


def compile_plan(document: SpecDocument) -> Plan:
    """Build the graph of a validated spec and compile its plan; `TypeError` for anything but a
    `SpecDocument`, saying which call makes one."""
    if not isinstance(document, SpecDocument):
        hint = ("spec_from_data(data)" if isinstance(document, dict) else "load_spec(path)"
                if isinstance(document, (str, Path)) else "load_spec(path) or spec_from_data(data)")
        raise TypeError(f"compile_plan takes a SpecDocument, not {_kind(document)}: compile_plan({hint})"
                        + (", or compile_spec(path) in one call" if isinstance(document, (str, Path)) else ""))
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
    training = _resolved_training(document)
    return Plan(document.name, network, execution_order, tuple(slots), document.source, document.spec.init,
                training, json.dumps(_resolved_spec(document, training)))


def require_plan(value: Any, caller: str) -> Plan:
    """``value`` if it is a `Plan`, else a `TypeError` naming ``caller`` and how to make one."""
    if not isinstance(value, Plan):
        raise TypeError(f"{caller} takes a compiled Plan, not {_kind(value)}: lstmgraph.compile_spec(path), "
                        "or lstmgraph.compile_plan(document) for a SpecDocument")
    return value


def _kind(value: Any) -> str:
    """A value's type in words, for the messages above."""
    return "a SpecDocument" if isinstance(value, SpecDocument) else f"a {type(value).__name__}"


def _resolved_training(document: SpecDocument) -> TrainingSpec | None:
    """The training section with a relative data path (``data``, or the ``data_file`` task's
    ``path`` and ``test_path``) joined to the spec file's folder (the current directory for a
    spec built in Python) and the data seed defaulting to init.seed."""
    training = document.spec.training
    if training is None:
        return None
    changes: dict[str, Any] = {}
    if training.seed is None:
        changes["seed"] = document.spec.init.seed
    if training.data is not None and not Path(training.data).is_absolute():
        changes["data"] = beside(document.source.filename, training.data)
    options = spec_relative(training.task.name, training.task.options, document.source.filename) \
        if training.task is not None else None
    if options is not None and options != training.task.options:
        changes["task"] = TaskSpec(name=training.task.name, **options)
    return training.model_copy(update=changes)


def _resolved_spec(document: SpecDocument, training: TrainingSpec | None) -> dict[str, Any]:
    """The spec as plain data, defaults filled in (the name too: a run's spec.yaml names the
    network as its spec did, not after its own file); a task's options (which model_dump leaves
    out) put back; a data file's path absolute (`_training`)."""
    data = document.spec.model_copy(update={"name": document.name}).model_dump(
        by_alias=True, exclude_none=True, mode="json", exclude={"schema_reference"})
    if training is not None:
        section = data["training"]
        if training.task is not None:
            section["task"] = {"name": training.task.name, **training.task.options}
        if section.get("data"):
            section["data"] = training.data  # (absolute: `beside`)
    return data
