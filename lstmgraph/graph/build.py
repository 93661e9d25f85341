"""Stage 2, the structure: a networkx graph of unit groups and connections, checked as a whole.

Nodes are the primitive unit groups (memory blocks already expanded into ports). Each
connection is an edge ``source -> target`` (key: the connection's name); each gated connection
adds an edge ``gate -> target`` of kind ``gate``. Checks: every computed group receives a
connection, every declared gate gates something, there is an output group, and the same-step
(delay 0) edges form no cycle; a cycle is reported with the names of its units.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from ..errors import Problem, SpecError, format_path
from ..spec import SpecDocument
from .expand import expand
from .units import Connection, Unit


@dataclass(frozen=True)
class NetworkGraph:
    """The expanded network: unit groups, connections and their networkx graph."""

    units: tuple[Unit, ...]
    connections: tuple[Connection, ...]
    graph: nx.MultiDiGraph

    def unit(self, name: str) -> Unit:
        return self.graph.nodes[name]["unit"]

    def same_step_graph(self) -> nx.DiGraph:
        """The dependencies within one step: delay-0 connections and gate edges."""
        dependencies = nx.DiGraph()
        dependencies.add_nodes_from(unit.name for unit in self.units)
        dependencies.add_edges_from((source, target) for source, target, data
                                    in self.graph.edges(data=True) if data["delay"] == 0)
        return dependencies


def build_graph(document: SpecDocument) -> NetworkGraph:
    """Expand the spec and build its graph; raise `SpecError` naming every problem found."""
    units, connections, problems = expand(document.spec, document.data)
    if problems:  # (once each: an entry's gated_by is checked for each of its pairs)
        raise SpecError(list(dict.fromkeys(problems)), document.source)
    graph = nx.MultiDiGraph(name=document.name)
    for unit in units:
        graph.add_node(unit.name, unit=unit)
    for connection in connections:
        graph.add_edge(connection.source, connection.target, key=connection.name, kind="weight",
                       delay=connection.delay, gradient=connection.gradient, connection=connection)
        if connection.gate:
            graph.add_edge(connection.gate, connection.target, key=f"{connection.name} gate",
                           kind="gate", delay=0, gradient=True, connection=connection)
    network = NetworkGraph(tuple(units), tuple(connections), graph)
    problems = _structure_problems(network) + _cycle_problems(network)
    if problems:
        raise SpecError(problems, document.source)
    return network


def _structure_problems(network: NetworkGraph) -> list[Problem]:
    problems = []
    targets = {connection.target for connection in network.connections}
    gates = {connection.gate for connection in network.connections if connection.gate}
    for unit in network.units:
        if unit.computed and unit.name not in targets:
            where = f"memory block '{unit.group}': " if unit.name != unit.group else ""
            problems.append(Problem(unit.spec_path, f"{where}'{unit.name}' receives no connection",
                                    expected=f"at least one connection with to: {unit.name}"))
        if unit.role == "gate" and unit.name not in gates:
            problems.append(Problem(unit.spec_path, f"gate '{unit.name}' gates no connection",
                                    expected=f"a connection with gated_by: {unit.name}",
                                    suggestion="or declare it with kind: hidden"))
    if not any(unit.role == "output" for unit in network.units):
        problems.append(Problem(("groups",), "the spec has no output group",
                                expected="at least one group with kind: output"))
    return problems


def _cycle_problems(network: NetworkGraph) -> list[Problem]:
    try:
        cycle = nx.find_cycle(network.same_step_graph())
    except nx.NetworkXNoCycle:
        return []
    # Start the cycle at its earliest-declared unit so the message is stable.
    rank = {unit.name: index for index, unit in enumerate(network.units)}
    first = min(range(len(cycle)), key=lambda index: rank[cycle[index][0]])
    cycle = cycle[first:] + cycle[:first]
    units = [source for source, _ in cycle] + [cycle[0][0]]
    links, culprit = [], None
    for source, target in cycle:
        for _, _, data in network.graph.edges(source, data=True):
            connection: Connection = data["connection"]
            if connection.target != target or data["delay"] != 0:
                continue
            where = f" ({format_path(connection.spec_path)})"
            if data["kind"] == "gate":
                links.append(f"gate {source} multiplying {connection.name}{where}")
            else:
                links.append(f"{connection.name}{where}")
                if culprit is None and not connection.internal:
                    culprit = connection
    return [Problem(culprit.spec_path if culprit else (), f"same-step cycle: {' -> '.join(units)}",
                    expected="every loop to pass through a connection with delay: 1; the loop runs "
                             "through " + ", ".join(links),
                    suggestion="set delay: 1 on a connection of the loop (a gate always acts "
                               "within its step)")]
