"""Expand a validated spec into primitive unit groups and connections, resolving every name.

Checks made here, each reported at its field: unknown or misspelt unit and port names, ports
that do not exist or cannot receive connections, size mismatches of one-to-one connections
and gates, peepholes that do not run from a block's cell states to its own gates, gates named
by ``gated_by`` that are not gates, init value counts, and duplicate names.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import Problem, SpecPath, did_you_mean, format_path
from ..operations import GATE_SIDES, PATTERNS
from ..limits import LIMITS_HINT, MAX_GROUP_SIZE, MAX_WEIGHTS
from ..spec.models import ConnectionInit, ConnectionSpec, MemoryBlockGroup, NetworkSpec
from .units import BIAS, MEMORY_PORTS, MEMORY_TARGET_PORTS, Connection, Unit

_FIXED_ONE = ConnectionInit(constant=1.0)


class _Expansion:
    def __init__(self, spec: NetworkSpec, data: Any):
        self.spec = spec
        self.data = data
        self.units: dict[str, Unit] = {}
        self.connections: list[Connection] = []
        self.problems: list[Problem] = []
        self.memory_groups: dict[str, tuple[int, MemoryBlockGroup]] = {}
        self.group_index: dict[str, int] = {}

    # -- groups --------------------------------------------------------------------------------
    def add_groups(self) -> None:
        for index, group in enumerate(self.spec.groups):
            path: SpecPath = ("groups", index)
            if group.name == BIAS:
                self.problems.append(Problem(path + ("name",), "'bias' is reserved",
                                             expected="another name; 'bias' is the always-on unit "
                                                      "that biased connections come from"))
                continue
            if group.name in self.group_index:
                first = self.group_index[group.name]
                self.problems.append(Problem(path + ("name",), f"a group named '{group.name}' already "
                                             f"exists (groups[{first}])", expected="unique group names"))
                continue
            self.group_index[group.name] = index
            if isinstance(group, MemoryBlockGroup):
                self.memory_groups[group.name] = (index, group)
                self._add_memory_block(group, path)
            else:
                activation = getattr(group, "activation", "identity")
                self.units[group.name] = Unit(group.name, group.kind, group.size, activation,
                                              group.name, path)

    def _add_memory_block(self, group: MemoryBlockGroup, path: SpecPath) -> None:
        cells = group.blocks * group.cells_per_block
        if cells > MAX_GROUP_SIZE:
            self.problems.append(Problem(path + ("cells_per_block",), f"{group.blocks:,} blocks of "
                                         f"{group.cells_per_block:,} cells make {cells:,} cells",
                                         expected=f"at most {MAX_GROUP_SIZE:,} ({LIMITS_HINT})"))
        parts = {
            "forget_gate": ("forget" in group.gates, group.blocks, group.gate_activation),
            "input_gate": ("input" in group.gates, group.blocks, group.gate_activation),
            "cell_input": (True, cells, group.cell_input_activation),
            "state": (True, cells, "identity"),
            "output_gate": ("output" in group.gates, group.blocks, group.gate_activation),
            "squashed_state": (True, cells, group.cell_output_activation),
            "cell_output": (True, cells, "identity"),
        }
        for port in MEMORY_PORTS:
            present, size, activation = parts[port]
            if present:
                name = f"{group.name}.{port}"
                self.units[name] = Unit(name, port, size, activation, group.name, path,
                                        (group.blocks, group.cells_per_block))

        def gate(port: str) -> str | None:
            name = f"{group.name}.{port}"
            return name if name in self.units else None

        def wire(source: str, target: str, delay: int, gated_by: str | None,
                 init: ConnectionInit = _FIXED_ONE) -> None:
            source_name, target_name = f"{group.name}.{source}", f"{group.name}.{target}"
            self.connections.append(Connection(
                name=f"{source_name}->{target_name}", source=source_name, target=target_name,
                pattern="one_to_one", delay=delay, gradient=True, trainable=False, init=init,
                gate=gated_by, gate_complement=False, shape=(cells,), spec_path=path, internal=True))

        wire("cell_input", "state", 0, gate("input_gate"))
        wire("state", "state", 1, gate("forget_gate"), ConnectionInit(constant=group.state_decay))
        wire("state", "squashed_state", 0, None)
        wire("squashed_state", "cell_output", 0, gate("output_gate"))

    # -- name resolution -----------------------------------------------------------------------
    def _references(self, as_target: bool) -> list[str]:
        names = [name for name, unit in self.units.items()
                 if not as_target or (unit.computed and unit.role not in
                                      ("state", "squashed_state", "cell_output"))]
        return names if as_target else names + [BIAS]

    def resolve(self, reference: str, path: SpecPath, as_target: bool) -> Unit | None:
        """The unit group a connection endpoint names, or None after recording a problem."""
        if reference == BIAS and not as_target:
            if BIAS not in self.units:
                self.units[BIAS] = Unit(BIAS, "bias", 1, "identity", BIAS, ())
            return self.units[BIAS]
        unit = self.units.get(reference)
        if unit is not None:
            if as_target and not unit.computed:
                self.problems.append(Problem(path, f"'{reference}' is an {unit.role} group and cannot "
                                             "receive connections"))
                return None
            if as_target and unit.role in ("state", "squashed_state", "cell_output"):
                self.problems.append(Problem(
                    path, f"'{reference}' cannot receive connections",
                    expected=f"a port a block's inputs arrive at: "
                             f"{', '.join(f'{unit.group}.{p}' for p in MEMORY_TARGET_PORTS)}"))
                return None
            return unit
        group_name, _, port = reference.partition(".")
        if group_name in self.memory_groups:
            index, group = self.memory_groups[group_name]
            ports = [p for p in MEMORY_PORTS if f"{group_name}.{p}" in self.units]
            if not port:
                self.problems.append(Problem(
                    path, f"'{reference}' is a memory block; name one of its ports",
                    expected=", ".join(f"{group_name}.{p}" for p in ports),
                    suggestion=f"did you mean '{group_name}.{'cell_output' if not as_target else 'cell_input'}'?"))
                return None
            if port.endswith("_gate") and port in MEMORY_PORTS:
                gate_kind = port[:-len("_gate")]
                self.problems.append(Problem(
                    path, f"memory block '{group_name}' has no {gate_kind} gate",
                    expected=f"one of its ports: {', '.join(f'{group_name}.{p}' for p in ports)}",
                    suggestion=f"add '{gate_kind}' to groups[{index}].gates"))
                return None
            match = did_you_mean(port, ports)
            self.problems.append(Problem(
                path, f"memory block '{group_name}' has no port '{port}'",
                expected=", ".join(f"{group_name}.{p}" for p in ports),
                suggestion=f"did you mean '{group_name}.{match}'?" if match else None))
            return None
        if port and group_name in self.units:
            self.problems.append(Problem(path, f"'{group_name}' is not a memory block and has no ports",
                                         suggestion=f"did you mean '{group_name}'?"))
            return None
        candidates = self._references(as_target)
        match = did_you_mean(reference, candidates)
        self.problems.append(Problem(
            path, f"unknown unit '{reference}'",
            expected="a group name, a memory-block port such as mem.cell_output, or 'bias'"
                     if not as_target else "a group name or a memory-block port such as mem.input_gate",
            suggestion=f"did you mean '{match}'?" if match else None))
        return None

    # -- connections ---------------------------------------------------------------------------
    def add_connections(self) -> None:
        names: dict[str, SpecPath] = {c.name: c.spec_path for c in self.connections}
        for index, spec in enumerate(self.spec.connections):
            path: SpecPath = ("connections", index)
            sources = [self.resolve(name, self._endpoint_path(index, "from", position), as_target=False)
                       for position, name in enumerate(spec.source)]
            targets = [self.resolve(name, self._endpoint_path(index, "to", position), as_target=True)
                       for position, name in enumerate(spec.to)]
            for source in sources:
                for position, target in enumerate(targets):
                    if source is None or target is None:
                        continue
                    to_path = self._endpoint_path(index, "to", position)
                    connection = self._connection(spec, source, target, path, to_path)
                    if connection is None:
                        continue
                    if connection.name in names and names[connection.name] == path:
                        self.problems.append(Problem(  # (a name listed twice in from or to, or two names of one group)
                            path, f"'{connection.source}' to '{connection.target}' twice in this entry",
                            expected="each source and each target once", suggestion="drop the repeated name"))
                        continue
                    if connection.name in names:
                        self.problems.append(Problem(
                            to_path, f"a connection named '{connection.name}' already exists"
                            f" ({format_path(names[connection.name])})",
                            expected="one connection per source and target",
                            suggestion="give one of them a distinct `name`"))
                        continue
                    names[connection.name] = path
                    self.connections.append(connection)

    def _endpoint_path(self, index: int, key: str, position: int) -> SpecPath:
        """``connections[i].to`` for a plain string, ``connections[i].to[j]`` for a list."""
        raw = self.data.get("connections")
        entry = raw[index] if isinstance(raw, list) and index < len(raw) else None
        written_as_list = isinstance(entry, dict) and isinstance(entry.get(key), list)
        return ("connections", index, key, position) if written_as_list else ("connections", index, key)

    def _connection(self, spec: ConnectionSpec, source: Unit, target: Unit,
                    path: SpecPath, to_path: SpecPath) -> Connection | None:
        before = len(self.problems)
        pattern = spec.pattern
        if pattern == "one_to_one" and source.size != target.size:
            self.problems.append(Problem(
                to_path, f"one_to_one needs equal sizes, but '{source.name}' has "
                f"{source.size} units and '{target.name}' has {target.size}",
                suggestion="use pattern: full"))
        if pattern == "peephole":
            if source.role != "state":
                self.problems.append(Problem(
                    path + ("from",), f"a peephole must come from a memory block's cell states, "
                    f"not '{source.name}' ({source.role})",
                    expected=f"{source.group}.state" if source.group in self.memory_groups
                    else "a port like mem.state", suggestion="or use pattern: full"))
            elif not target.is_gate or target.role == "gate" or target.group != source.group:
                self.problems.append(Problem(
                    to_path, f"a peephole from '{source.name}' must go to a gate of the same block",
                    expected=", ".join(f"{source.group}.{p}" for p in ("input_gate", "forget_gate", "output_gate")
                                       if f"{source.group}.{p}" in self.units)))
        shape = PATTERNS[pattern].shape(target.size, source.size)
        gate = None
        if spec.gated_by is not None:
            gate = self.resolve(spec.gated_by, path + ("gated_by",), as_target=False)
            if gate is not None and not gate.is_gate:
                self.problems.append(Problem(
                    path + ("gated_by",), f"'{gate.name}' is a{'n' if gate.role[0] in 'aeiou' else ''} "
                    f"{gate.role} group, not a gate", expected="a group of kind gate or a memory-block gate port"))
            else:
                gated = source if GATE_SIDES[spec.gate_side].divides == "source" else target
                if gate is not None and gated.size % gate.size:
                    self.problems.append(Problem(
                        path + ("gated_by",), f"gate '{gate.name}' has {gate.size} units, which cannot split "
                        f"the {gated.size} units of '{gated.name}' into equal blocks",
                        expected=f"a gate whose size divides {gated.size}",
                        suggestion=None if spec.gate_side == "target" or target.size % gate.size
                        else "gate the target side instead (gate_side: target)"))
        if spec.init is not None and spec.init.values is not None:
            count = len(spec.init.values)
            rows = shape[0]
            if count not in (rows, math.prod(shape)):
                self.problems.append(Problem(
                    path + ("init", "values"), f"{count} values for the {'x'.join(map(str, shape))} weight "
                    f"{source.name}->{target.name}",
                    expected=f"{rows} value{'s' if rows != 1 else ''} (one per receiving row)"
                    + (f" or {math.prod(shape)} (every weight, row by row)" if math.prod(shape) != rows else "")))
        if len(self.problems) > before:
            return None
        delay = spec.delay
        if delay is None:
            delay = 1 if pattern == "peephole" and target.role in ("input_gate", "forget_gate") else 0
        gradient = spec.gradient if spec.gradient is not None else (delay == 0 and pattern != "peephole")
        name = spec.name or f"{source.name}->{target.name}"
        return Connection(name=name, source=source.name, target=target.name, pattern=pattern,
                          delay=delay, gradient=gradient, trainable=spec.trainable, init=spec.init,
                          gate=gate.name if gate else None, gate_complement=spec.gate_complement,
                          shape=shape, spec_path=path, gate_side=spec.gate_side)


def expand(spec: NetworkSpec, data: Any) -> tuple[list[Unit], list[Connection], list[Problem]]:
    """Primitive unit groups (declaration order) and connections, plus the problems found."""
    expansion = _Expansion(spec, data if isinstance(data, dict) else {})
    expansion.add_groups()
    expansion.add_connections()
    weights = sum(math.prod(connection.shape) for connection in expansion.connections)
    if weights > MAX_WEIGHTS:
        expansion.problems.append(Problem(("connections",), f"the connections hold {weights:,} weights",
                                          expected=f"at most {MAX_WEIGHTS:,} ({LIMITS_HINT})"))
    # The always-on bias unit, when used, is listed first with the other given values.
    units = sorted(expansion.units.values(), key=lambda unit: unit.role != "bias")
    return units, expansion.connections, expansion.problems
