"""Named changes to a bundled spec's data, the catalogue's `Variant`s: without forget gates,
without peepholes, state decay, an identity output, 8 symbols, a forget-gate bias, the 2000
CERG net's wiring (output biases, input-to-output shortcut, cell-only recurrent sources) and
no truncation (every connection carrying gradient).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Variant:
    """A named change to a spec's data (applied to a copy)."""

    description: str
    apply: Callable[[dict[str, Any]], None]


def _memory_groups(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [group for group in data["groups"] if group.get("kind") == "memory_block"]


def _drop_targets(data: dict[str, Any], port: str) -> None:
    kept = []
    for connection in data["connections"]:
        targets = connection["to"] if isinstance(connection["to"], list) else [connection["to"]]
        targets = [t for t in targets if not t.endswith(f".{port}")]
        if targets:
            kept.append({**connection, "to": targets})
    data["connections"] = kept


def _without_forget_gate(data: dict[str, Any]) -> None:
    for group in _memory_groups(data):
        group["gates"] = [gate for gate in group.get("gates", ["input", "output"]) if gate != "forget"]
    _drop_targets(data, "forget_gate")


def _without_peepholes(data: dict[str, Any]) -> None:
    data["connections"] = [c for c in data["connections"] if c.get("pattern") != "peephole"]


def state_decay(value: float) -> Variant:
    """Every cell state decays by ``value`` per step, s(t) = value * s(t-1) + input: the 2000
    paper's state-decay baseline (seed 000 gives no constant; the catalogue's is 0.9)."""
    def apply(data: dict[str, Any]) -> None:
        for group in _memory_groups(data):
            group["state_decay"] = value
    return Variant(f"cell states decay by {value:g} per step", apply)


def state_decays(data: dict[str, Any]) -> set[float]:
    """The state-decay constants of a spec's memory groups (1.0, the CEC, where none is set)."""
    return {float(group.get("state_decay", 1.0)) for group in _memory_groups(data)}


def _identity_output(data: dict[str, Any]) -> None:
    for group in data["groups"]:
        if group.get("kind") == "output":
            group["activation"] = "identity"


def _symbols(width: int) -> Callable[[dict[str, Any]], None]:
    def apply(data: dict[str, Any]) -> None:
        for group in data["groups"]:
            if group.get("kind") in ("input", "output"):
                group["size"] = width
    return apply


def forget_gate_bias(value: float, description: str | None = None) -> Variant:
    """The forget gates' bias weights initialised to ``value`` (2000: +5 or +1; seed 002: -2).
    ``description`` names it otherwise (the 2000 rows' folders record "forget-gate biases +5")."""
    def apply(data: dict[str, Any]) -> None:
        for connection in data["connections"]:
            targets = connection["to"] if isinstance(connection["to"], list) else [connection["to"]]
            if connection["from"] == "bias" and targets == ["memory.forget_gate"]:
                connection["init"] = {"constant": value}
    return Variant(description or f"forget-gate bias {value:+g}", apply)


def _group_names(data: dict[str, Any], kind: str) -> list[str]:
    return [group["name"] for group in data["groups"] if group.get("kind") == kind]


def _output_biases(data: dict[str, Any]) -> None:
    data["connections"] += [{"from": "bias", "to": output} for output in _group_names(data, "output")]


def _input_output_shortcut(data: dict[str, Any]) -> None:
    data["connections"] += [{"from": source, "to": output} for source in _group_names(data, "input")
                            for output in _group_names(data, "output")]


def _cell_sources_only(data: dict[str, Any]) -> None:
    """Recurrent (delay 1) connections keep only the cell outputs as sources, not the gates."""
    for connection in data["connections"]:
        if connection.get("delay") == 1:
            sources = connection["from"] if isinstance(connection["from"], list) else [connection["from"]]
            connection["from"] = [source for source in sources if source.endswith(".cell_output")]


def _full_gradient(data: dict[str, Any]) -> None:
    """Every connection carries gradient (``gradient: true``): no truncation (docs/spec.md)."""
    for connection in data["connections"]:
        connection["gradient"] = True


WITHOUT_FORGET_GATE = Variant("without forget gates (standard 1997 LSTM)", _without_forget_gate)
WITHOUT_PEEPHOLES = Variant("without peephole connections", _without_peepholes)
STATE_DECAY = state_decay(0.9)
IDENTITY_OUTPUT = Variant("identity (linear) output unit", _identity_output)
EIGHT_SYMBOLS = Variant("8 inputs and 8 outputs (2000: NTO, CNTO)", _symbols(8))
# The 2000 CERG net's wiring, each change on its own (a `lstmgraph sweep` over the variant.* keys ablates them).
OUTPUT_BIASES = Variant("with output biases", _output_biases)
INPUT_OUTPUT_SHORTCUT = Variant("with input-to-output shortcut connections", _input_output_shortcut)
CELL_SOURCES_ONLY = Variant("with only cell outputs as recurrent sources", _cell_sources_only)
#: With BPTT, the exact gradient (exact RTRL ignores the flags and keeps every path anyway).
FULL_GRADIENT = Variant("every connection carries gradient (no truncation)", _full_gradient)
WIRING_2000 = (INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES, CELL_SOURCES_ONLY)
