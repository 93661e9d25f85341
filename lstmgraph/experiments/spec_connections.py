"""A spec's connections by ``FROM->TO`` pair or by the name the spec gives one, as a sweep reads
and changes them: every pair in order (`connection_pairs`), a connection's init (`connection_init`,
`set_connection_init`, which splits a multi-target entry) and the bias pairs of a gate
(`gate_pairs`). The sweep keys ``init.FROM->TO`` and ``GATE_gate_bias`` (`sweep_keys`) are built
on them."""

from __future__ import annotations

import copy
from typing import Any

from .sweep_values import SweepError


def _as_list(names: Any) -> list[str]:
    return list(names) if isinstance(names, list) else [names]


def _one_pair(connection: dict[str, Any]) -> bool:
    """Whether a connections entry joins one source to one target."""
    return len(_as_list(connection["from"])) * len(_as_list(connection["to"])) == 1


def connection_pairs(data: dict[str, Any]) -> list[str]:
    """Every ``FROM->TO`` pair of the spec's connections, in order."""
    return [f"{source}->{target}" for connection in data.get("connections", [])
            for source in _as_list(connection["from"]) for target in _as_list(connection["to"])]


def connection_keys(data: dict[str, Any]) -> list[str]:
    """Every connection a sweep's ``init.`` key can name, in order: its ``FROM->TO`` pair, or,
    for a pair the spec joins twice, each entry's own name (an unnamed one cannot be keyed)."""
    keys: list[str] = []
    for pair in connection_pairs(data):
        joining = entries_joining(data, pair)
        for key in [pair] if len(joining) == 1 else [data["connections"][i].get("name") for i in joining]:
            if key and key not in keys:
                keys.append(key)
    return keys


def named_entry(data: dict[str, Any], name: str) -> int | None:
    """The index of the entry the spec names ``name`` (its ``name`` field), where that entry joins
    one source to one target; else None. A sweep's ``init.NAME`` keys a connection so."""
    for index, connection in enumerate(data.get("connections", [])):
        if connection.get("name") == name and _one_pair(connection):
            return index
    return None


def named_key(data: dict[str, Any], name: str) -> str | None:
    """The key a sweep records for the connection the spec names ``name``: its ``FROM->TO`` pair
    (one connection, one key: ``init.loop`` and ``init.h->h`` are the same setting), or the name
    itself where the spec joins that pair twice; None if no one-pair entry has that name."""
    index = named_entry(data, name)
    if index is None:
        return None
    entry = data["connections"][index]
    pair = f"{_as_list(entry['from'])[0]}->{_as_list(entry['to'])[0]}"
    return pair if len(entries_joining(data, pair)) == 1 else name


def entries_joining(data: dict[str, Any], pair: str) -> list[int]:
    """The indices of the entries that join ``FROM->TO`` (two, where a spec joins a pair twice:
    PyTorch's input and recurrent biases of a GRU gate)."""
    source, _, target = pair.partition("->")
    return [index for index, connection in enumerate(data.get("connections", []))
            if source in _as_list(connection["from"]) and target in _as_list(connection["to"])]


def connection_init(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The init of connection ``key`` (``FROM->TO``, or the name the spec gives it): its own, else
    the spec's default uniform one; None if the spec has no such connection."""
    found = entries_joining(data, key) if "->" in key else [i for i in [named_entry(data, key)] if i is not None]
    if not found:
        return None
    return data["connections"][found[0]].get("init") or {"uniform": data.get("init", {}).get("uniform", 0.1)}


def set_connection_init(data: dict[str, Any], key: str, init: dict[str, Any]) -> None:
    """Give connection ``key`` (``FROM->TO``, or the name the spec gives it) the initialisation
    ``init``: in place where the entry holds that pair alone, else the entry is split into one
    entry per pair (in the order the graph expands them) and that pair's gets it. `SweepError` if
    the spec has no such connection."""
    if "->" not in key:
        index = named_entry(data, key)
        if index is None:
            raise SweepError(f"the spec has no connection named {key}")
        data["connections"][index]["init"] = copy.deepcopy(init)
        return
    source, _, target = key.partition("->")
    for index in entries_joining(data, key)[:1]:
        connection = data["connections"][index]
        if _one_pair(connection):
            connection["init"] = copy.deepcopy(init)
            return
        sources, targets = _as_list(connection["from"]), _as_list(connection["to"])
        split = [{**connection, "from": s, "to": t} for s in sources for t in targets]
        for entry in split:
            if (entry["from"], entry["to"]) == (source, target):
                entry["init"] = copy.deepcopy(init)
        data["connections"][index:index + 1] = split
        return
    raise SweepError(f"the spec has no connection {key}")


def gate_pairs(data: dict[str, Any], port: str) -> list[str]:
    """``bias->BLOCK.PORT`` of every memory group that has the gate (``forget_gate``, ...)."""
    pairs = connection_pairs(data)
    return [pair for pair in pairs if pair.startswith("bias->") and pair.endswith(f".{port}")]


def check_one_connection(data: dict[str, Any], typed: str) -> None:
    """`SweepError` for ``init.FROM->TO`` (as typed) of a pair the spec joins twice, naming its entries."""
    pair = typed[len("init."):]
    joining = entries_joining(data, pair) if "->" in pair else []
    if len(joining) > 1:
        names = [data["connections"][index].get("name") for index in joining]
        hint = (f"; name one: {', '.join(f'init.{name}' for name in names)}" if all(names)
                else "; give each a name in the spec (name: ...) and vary init.NAME")
        raise SweepError(f"--vary {typed}: the spec joins {pair} {len(joining)} times (connections "
                         f"{', '.join(str(index) for index in joining)}){hint}")
