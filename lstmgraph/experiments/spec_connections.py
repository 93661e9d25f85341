"""A spec's connections by ``FROM->TO`` pair, as a sweep reads and changes them: every pair in
order (`connection_pairs`), a pair's init (`connection_init`, `set_connection_init`, which splits a
multi-target entry) and the bias pairs of a gate (`gate_pairs`). The sweep keys ``init.FROM->TO``
and ``GATE_gate_bias`` (`sweep_keys`) are built on them."""

from __future__ import annotations

import copy
from typing import Any

from .sweep_values import SweepError


def _as_list(names: Any) -> list[str]:
    return list(names) if isinstance(names, list) else [names]


def connection_pairs(data: dict[str, Any]) -> list[str]:
    """Every ``FROM->TO`` pair of the spec's connections, in order."""
    return [f"{source}->{target}" for connection in data.get("connections", [])
            for source in _as_list(connection["from"]) for target in _as_list(connection["to"])]


def named_pair(data: dict[str, Any], name: str) -> str | None:
    """The ``FROM->TO`` pair of the connection the spec names ``name`` (its ``name`` field), where
    that entry joins one source to one target; else None."""
    for connection in data.get("connections", []):
        sources, targets = _as_list(connection["from"]), _as_list(connection["to"])
        if connection.get("name") == name and len(sources) * len(targets) == 1:
            return f"{sources[0]}->{targets[0]}"
    return None


def connection_init(data: dict[str, Any], pair: str) -> dict[str, Any] | None:
    """The init of connection ``FROM->TO``: its own, else the spec's default uniform one; None if
    the spec has no such pair."""
    source, _, target = pair.partition("->")
    for connection in data.get("connections", []):
        if source in _as_list(connection["from"]) and target in _as_list(connection["to"]):
            return connection.get("init") or {"uniform": data.get("init", {}).get("uniform", 0.1)}
    return None


def set_connection_init(data: dict[str, Any], pair: str, init: dict[str, Any]) -> None:
    """Give connection ``FROM->TO`` the initialisation ``init``: in place where the entry holds that
    pair alone, else the entry is split into one entry per pair (in the order the graph expands
    them) and that pair's gets it. `SweepError` if the spec has no such pair."""
    source, _, target = pair.partition("->")
    for index, connection in enumerate(data.get("connections", [])):
        sources, targets = _as_list(connection["from"]), _as_list(connection["to"])
        if source not in sources or target not in targets:
            continue
        if len(sources) * len(targets) == 1:
            connection["init"] = copy.deepcopy(init)
            return
        split = [{**connection, "from": s, "to": t} for s in sources for t in targets]
        for entry in split:
            if (entry["from"], entry["to"]) == (source, target):
                entry["init"] = copy.deepcopy(init)
        data["connections"][index:index + 1] = split
        return
    raise SweepError(f"the spec has no connection {pair}")


def gate_pairs(data: dict[str, Any], port: str) -> list[str]:
    """``bias->BLOCK.PORT`` of every memory group that has the gate (``forget_gate``, ...)."""
    pairs = connection_pairs(data)
    return [pair for pair in pairs if pair.startswith("bias->") and pair.endswith(f".{port}")]
