"""What a sweep may vary (`lstmgraph sweep --vary KEY=V1,V2,...`): the registry of sweep keys.

Each `SweepKey` is defined once here, with the values it takes, what it means, how it changes an
`Experiment` (`apply`) and the row's own value (`current`, None where the row has no single
value, e.g. weights drawn at random). A family key (``task.NAME``, ``protocol.NAME``,
``variant.NAME``, ``init.FROM->TO``) also lists the NAMEs a row has. The command's error
messages, ``--keys`` and docs/sweeps.md's table (`keys_table`, held to the docs by a test) all
read this registry; `sweep_values.parse_vary` reads the values of one ``--vary``.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ..errors import SpecError
from ..spec.models import LEARNING_RULES
from ..tasks import TASKS, TaskError
from ..tasks.data_file import DATA_FILE, FILE_OPTIONS, DataError, pinned
from .catalogue import FORGET_OPEN
from .experiment import Experiment
from .protocols import ProtocolError
from .spec_connections import (check_one_connection, connection_init, connection_keys, gate_pairs, named_key,
                               set_connection_init)
from .sweep_values import SweepError, finite_number
from .variants import (CELL_SOURCES_ONLY, EIGHT_SYMBOLS, FULL_GRADIENT, IDENTITY_OUTPUT, INPUT_OUTPUT_SHORTCUT,
                       OUTPUT_BIASES, STATE_DECAY, WITHOUT_FORGET_GATE, WITHOUT_PEEPHOLES, Variant, state_decay,
                       state_decays)

@dataclass(frozen=True)
class SweepKey:
    """One key of `KEYS`. ``name`` is the key as typed, or a family's pattern (``task.NAME``)."""

    name: str
    takes: str
    meaning: str
    apply: Callable[[Experiment, str, Any], Experiment]
    current: Callable[[Experiment, str], Any]
    names: Callable[[Experiment], list[str]] | None = None
    #: A family whose values a setting applies together, as one dict (``protocol.NAME``:
    #: ``success`` and the ``tolerance`` it reads are checked as one); else each by `apply`.
    apply_together: Callable[[Experiment, dict[str, Any]], Experiment] | None = None
    #: A value as the key reads it, to compare with the row's own (a data file's path made absolute).
    normalise: Callable[[Experiment, str, Any], Any] | None = None
    #: Whether a row's net has what the key changes (a net without forget gates: no forget_gate_bias);
    #: a key that does not apply is not listed, and varying it is refused, naming why.
    applies: Callable[[Experiment], bool] = lambda row: True
    #: Whether a family's NAME is listed for a row (`row_keys`, `--keys`); one not listed is still
    #: taken, where the setting's other values make it a valid net.
    listed: Callable[[Experiment, str], bool] = lambda row, name: True

    @property
    def prefix(self) -> str | None:
        """A family's prefix (``task.``), None for a plain key."""
        return self.name.split(".")[0] + "." if self.names is not None else None


# -- the values ------------------------------------------------------------------------------------
def _number(key: str, value: Any, low: float | None = None, high: float | None = None,
            high_open: bool = False, low_open: bool = False) -> float:
    fits = finite_number(value)
    if fits and low is not None:
        fits = value > low if low_open else value >= low
    if fits and high is not None:
        fits = value < high if high_open else value <= high
    if not fits:
        bounds = ""
        if low is not None:
            bounds += f" {'>' if low_open else '>='} {low:g}"
        if high is not None:
            bounds += f"{' and' if bounds else ''} {'<' if high_open else '<='} {high:g}"
        raise SweepError(f"{key} takes a finite number{bounds}, not {json.dumps(value)}")
    return value


def _init_of(key: str, value: Any) -> dict[str, Any]:
    """A connection's ``init`` from a sweep value: a number (every weight), a list (one per
    receiving unit, or per weight) or an init object as docs/spec.md gives it."""
    if isinstance(value, list) and value and all(finite_number(v) for v in value):
        return {"values": value}
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("uniform", "constant", "values"):
        return dict(value)
    return {"constant": _number(key, value)}


def _spec_data(row: Experiment) -> dict[str, Any]:
    return row.spec_data()[0]


def _with_variant(row: Experiment, description: str, change: Callable[[dict[str, Any]], None]) -> Experiment:
    """``row`` with one more change of its spec's data, checked on the data now (a key that does
    not apply raises at once, not on a worker)."""
    change(copy.deepcopy(_spec_data(row)))
    return replace(row, variants=row.variants + (Variant(description, change),))


def _variant_gives(row: Experiment, variant: Variant) -> str:
    """What turning ``variant`` on alone gives the row: "the same net" (a net without peepholes
    has none to drop; a net without forget gates rewritten without them), "another net", or "an
    invalid net" (output biases twice; 8 symbols for a 7-symbol task)."""
    data = _spec_data(row)
    changed = copy.deepcopy(data)
    variant.apply(changed)
    if changed == data:
        return "the same net"
    try:
        same = Experiment.plan_of(changed).resolved_spec == Experiment.plan_of(data).resolved_spec
    except SpecError:
        return "an invalid net"
    return "the same net" if same else "another net"


def invalid_alone(row: Experiment, values: dict[str, Any]) -> list[str]:
    """The ``variant.NAME`` keys set true in ``values`` that make ``row``'s net invalid by
    themselves: the net has what they add already, or its task does not fit them."""
    return [key for key, value in values.items() if key.startswith("variant.") and value is True
            and _variant_gives(row, VARIANTS[key[len("variant."):]]) == "an invalid net"]


def _gives_another_net(row: Experiment, name: str) -> bool:
    """Whether variant ``name`` is listed for the row (`--keys`): it has it, or it gives another
    valid net alone. One giving an invalid net alone is still taken: the setting's other values
    may make it valid (`eight_symbols` with `task.variant` 6b)."""
    return VARIANTS[name] in row.variants or _variant_gives(row, VARIANTS[name]) == "another net"


def _gate_bias_key(gate: str) -> tuple[Callable, Callable]:
    """A gate bias key's ``apply`` and ``current`` (its ``applies``: `_has_gate_bias`)."""
    port = f"{gate}_gate"

    def apply(row: Experiment, name: str, value: Any) -> Experiment:
        key = f"{gate}_gate_bias"
        init = _init_of(key, value)
        if not gate_pairs(_spec_data(row), port):
            raise SweepError(f"{key}: the row's net has no bias -> {port} connection (no {gate} gate?)")

        def change(data: dict[str, Any]) -> None:
            for pair in gate_pairs(data, port):
                set_connection_init(data, pair, init)
        return _with_variant(row, f"{gate}-gate bias {json.dumps(value)}", change)

    def current(row: Experiment, name: str) -> Any:
        data = _spec_data(row)
        return _single([connection_init(data, pair) for pair in gate_pairs(data, port)])
    return apply, current


def _has_gate_bias(gate: str) -> Callable[[Experiment], bool]:
    """A gate bias key's ``applies``: the row's net has a bias -> gate connection."""
    return lambda row: bool(gate_pairs(_spec_data(row), f"{gate}_gate"))


def _single(inits: list[dict[str, Any] | None]) -> Any:
    """The value a sweep would give for these inits, if they are one and constant: a number or a
    list of values; None for random weights."""
    if not inits or any(init is None for init in inits) or any(init != inits[0] for init in inits):
        return None
    init = inits[0]
    if "constant" in init:
        return init["constant"]
    if "values" in init:
        values = init["values"]
        return values[0] if len(set(values)) == 1 else values
    return None


# -- the registry ------------------------------------------------------------------------------------
def _rate(row: Experiment, name: str, value: Any) -> Experiment:
    return replace(row, learning_rate=float(_number("learning_rate", value, 0, low_open=True)))


def _momentum(row: Experiment, name: str, value: Any) -> Experiment:
    return replace(row, momentum=float(_number("momentum", value, 0, 1, high_open=True)))


def _training(row: Experiment, setting: str) -> Any:
    return _spec_data(row).get("training", {}).get(setting, 0.0 if setting == "momentum" else None)


def _task(row: Experiment, name: str, value: Any) -> Experiment:
    try:
        if row.task == DATA_FILE and name in FILE_OPTIONS and isinstance(value, str) and value:
            return row.with_task_options(pinned(value, name))  # another file: its own digest pinned
        return row.with_task_options({name: value})
    except (TaskError, ProtocolError, DataError) as error:
        raise SweepError(f"task.{name}: {error}") from None


def _task_names(row: Experiment) -> list[str]:
    pinned_digests = set(FILE_OPTIONS.values()) if row.task == DATA_FILE else set()  # (follow the paths: `pinned`)
    return [p for p in inspect.signature(TASKS[row.task]).parameters if p not in {"self", *pinned_digests}]


def _task_value(row: Experiment, name: str, value: Any) -> Any:
    """A data file's path as the setting reads it: from the current folder, absolute."""
    if row.task == DATA_FILE and name in FILE_OPTIONS and isinstance(value, str) and value:
        return str(Path(value).absolute())
    return value


def _task_current(row: Experiment, name: str) -> Any:
    if name in row.task_options:
        return row.task_options[name]
    default = inspect.signature(TASKS[row.task]).parameters[name].default
    return None if default is inspect.Parameter.empty else default


def protocol_settings(row: Experiment, options: dict[str, Any]) -> Experiment:
    """``row`` with a setting's ``protocol.NAME`` values, given together (``success`` and the
    ``tolerance`` it reads are checked as one), refused as `reproduce --protocol-option` refuses
    them: a value the protocol rejects, or one its trials would never read."""
    try:
        changed = row.with_protocol_options(options)
        changed.protocol.check_read(options)
    except ProtocolError as error:
        named = str(error).split(" ")[0].rstrip(":") in _protocol_names(row)  # "tolerance must be ..."
        raise SweepError(f"protocol.{error}" if named else f"protocol: {error}") from None
    return changed


def _protocol(row: Experiment, name: str, value: Any) -> Experiment:
    return protocol_settings(row, {name: value})


def _protocol_names(row: Experiment) -> list[str]:
    return [f.name for f in dataclasses.fields(row.protocol) if f.init]


#: The catalogue's named variants a sweep turns on or off (`variants.py`).
VARIANTS: dict[str, Variant] = {
    "without_forget_gate": WITHOUT_FORGET_GATE, "without_peepholes": WITHOUT_PEEPHOLES,
    "state_decay": STATE_DECAY, "identity_output": IDENTITY_OUTPUT, "eight_symbols": EIGHT_SYMBOLS,
    "output_biases": OUTPUT_BIASES, "input_shortcut": INPUT_OUTPUT_SHORTCUT,
    "cell_sources_only": CELL_SOURCES_ONLY, "forget_open": FORGET_OPEN, "full_gradient": FULL_GRADIENT,
}


def _variant(row: Experiment, name: str, value: Any) -> Experiment:
    if not isinstance(value, bool):
        raise SweepError(f"variant.{name} takes true or false, not {json.dumps(value)}")
    variant = VARIANTS[name]
    kept = tuple(v for v in row.variants if v != variant)
    return replace(row, variants=kept + ((variant,) if value else ()))


def _variants_of(row: Experiment) -> list[str]:
    """The variants a sweep of ``row`` can turn on or off: those it has, and those that change its net."""
    return [name for name, variant in VARIANTS.items()
            if variant in row.variants or _variant_gives(row, variant) != "the same net"]


def _init_range(row: Experiment, name: str, value: Any) -> Experiment:
    half = _number("init.range", value, 0, low_open=True)

    def change(data: dict[str, Any]) -> None:
        data["init"] = {**data.get("init", {}), "uniform": half}
    return _with_variant(row, f"weights uniform in [-{half:g}, {half:g}]", change)


def _init_pair(row: Experiment, pair: str, value: Any) -> Experiment:
    init = _init_of(f"init.{pair}", value)
    return _with_variant(row, f"{pair} weights {json.dumps(init)}",
                         lambda data: set_connection_init(data, pair, init))


def _state_decay(row: Experiment, name: str, value: Any) -> Experiment:
    decay = _number("state_decay", value, 0, 1, low_open=True)
    if not state_decays(_spec_data(row)):
        raise SweepError(f"state_decay: the spec of {row.name} has no memory block, so no cell state to decay")
    variant = state_decay(decay)
    kept = tuple(v for v in row.variants if v != STATE_DECAY)
    return replace(row, variants=kept + (variant,))


def _state_decay_current(row: Experiment, name: str) -> Any:
    decays = state_decays(_spec_data(row))
    return decays.pop() if len(decays) == 1 else None


def _rule(row: Experiment, name: str, value: Any) -> Experiment:
    if value not in LEARNING_RULES:
        raise SweepError(f"learning_rule takes {', '.join(LEARNING_RULES)}, not {json.dumps(value)}")
    if value == "bptt" and not row.protocol.trial_class.WHOLE_SEQUENCES:
        raise SweepError(f"learning_rule bptt learns over whole sequences; the {row.protocol.kind} protocol of "
                         f"{row.name} never ends one (use truncated_rtrl or rtrl)")

    def change(data: dict[str, Any]) -> None:
        data.setdefault("training", {})["learning_rule"] = value
    return _with_variant(row, f"learning rule {value}", change)


KEYS: dict[str, SweepKey] = {key.name: key for key in [
    SweepKey("learning_rate", "a number > 0", "the learning rate (the row's, else the spec's)", _rate,
             lambda row, name: row.learning_rate if row.learning_rate is not None else _training(row, "learning_rate")),
    SweepKey("momentum", "a number in [0, 1)", "the momentum of the weight updates", _momentum,
             lambda row, name: row.momentum if row.momentum is not None else _training(row, "momentum")),
    SweepKey("learning_rule", ", ".join(LEARNING_RULES), "the learning rule: the papers' truncated RTRL, exact "
             "RTRL (every gradient path kept: a bound on what the truncation costs), or BPTT over each sequence "
             "with one update at its end (sequence rows; with `variant.full_gradient` the exact gradient)", _rule,
             lambda row, name: _training(row, "learning_rule") or "truncated_rtrl"),
    SweepKey("state_decay", "a number in (0, 1]", "every cell state's decay per step, s(t) = d s(t-1) + input "
             "(the 2000 paper's state-decay baseline, which gives no d; 1 is the CEC)", _state_decay,
             _state_decay_current),
    SweepKey("init.range", "a number > 0", "the half-width a of the spec's default init, uniform in [-a, a] "
             "(connections with their own init keep it)", _init_range,
             lambda row, name: _spec_data(row).get("init", {}).get("uniform", 0.1)),
    *[SweepKey(f"{gate}_gate_bias", "a number, or a list of one per block",
               f"the initial bias of every {gate} gate (`init.bias->BLOCK.{gate}_gate`)", *_gate_bias_key(gate),
               applies=_has_gate_bias(gate))
      for gate in ("forget", "input", "output")],
    SweepKey("init.FROM->TO", "a number (every weight), a list (one per receiving unit) or "
             "{uniform|constant|values: ...}",
             "the initial weights of one connection of the spec (also `init.NAME`, by the name the spec gives it; "
             "a pair the spec joins twice, by name only)",
             _init_pair,
             lambda row, pair: _single([connection_init(_spec_data(row), pair)]),
             lambda row: connection_keys(_spec_data(row))),
    SweepKey("task.NAME", "a JSON value (text as is)",
             "an option of the row's task (docs/spec.md in the lstmgraph source, Built-in tasks)", _task,
             _task_current, _task_names, normalise=_task_value),
    SweepKey("protocol.NAME", "a value of the setting's type",
             "a setting of the row's protocol (`reproduce --protocol-option`)", _protocol,
             lambda row, name: getattr(row.protocol, name), _protocol_names, protocol_settings),
    SweepKey("variant.NAME", "true or false", "one of the catalogue's named changes to the net on or off: "
             + ", ".join(VARIANTS), _variant, lambda row, name: VARIANTS[name] in row.variants, _variants_of,
             listed=_gives_another_net),
]}


def row_keys(row: Experiment) -> list[str]:
    """Every key ``row`` takes, as typed (families expanded); `SpecError` where its net is not valid."""
    row.plan()  # (before: the keys of a spec `validate` refuses were listed, exit 0)
    keys: list[str] = []
    for key in KEYS.values():
        if key.applies(row):
            keys += [key.prefix + name for name in key.names(row) if key.listed(row, name)] if key.names \
                else [key.name]
    return keys


def resolve(row: Experiment, typed: str) -> tuple[str, SweepKey, str]:
    """(the key's full name, its `SweepKey`, the NAME of a family) of the key ``typed``: a key as
    `row_keys` lists it, or the bare name of a task option, protocol setting or variant where
    only one of them has it. `SweepError` names it, with the closest keys and where they are."""
    if typed in KEYS and KEYS[typed].names is None:
        return typed, KEYS[typed], ""
    if typed.startswith("init."):
        check_one_connection(_spec_data(row), typed)
        key = named_key(_spec_data(row), typed[len("init."):])
        if key is not None:  # by the name the spec gives it
            return f"init.{key}", KEYS["init.FROM->TO"], key
    families = [key for key in KEYS.values() if key.names is not None]
    for key in families:
        if typed.startswith(key.prefix) and typed[len(key.prefix):] in key.names(row):
            return typed, key, typed[len(key.prefix):]
    bare = [key for key in families if key.prefix != "init." and typed in key.names(row)]
    if len(bare) == 1:
        return bare[0].prefix + typed, bare[0], typed
    if len(bare) > 1:
        raise SweepError(f"--vary {typed}: ambiguous, it is " + " and ".join(k.prefix + typed for k in bare)
                         + "; name one")
    known = row_keys(row)
    close = difflib.get_close_matches(typed, known + [k.split(".", 1)[1] for k in known if "." in k], n=3,
                                      cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise SweepError(f"--vary {typed}: no such key for {row.name}{hint}; the keys: {keys_in_words(row)} "
                     "(`lstmgraph sweep NAME --keys` lists them with their values; "
                     "docs/sweeps.md in the lstmgraph source)")


def keys_in_words(row: Experiment) -> str:
    """The keys ``row`` takes, a family's NAMEs in parentheses (its connections counted)."""
    words = []
    for key in KEYS.values():
        if not key.applies(row):
            continue
        if key.names is None:
            words.append(key.name)
            continue
        names = [name for name in key.names(row) if key.listed(row, name)]
        shown = f"{len(names)} connections" if key.prefix == "init." else ", ".join(names)
        words.append(f"{key.name} ({shown})")
    return "; ".join(words)


def keys_table() -> str:
    """docs/sweeps.md's table of the keys (Markdown), from `KEYS`."""
    lines = ["| key | takes | meaning |", "|---|---|---|"]
    lines += [f"| `{key.name}` | {key.takes} | {key.meaning} |" for key in KEYS.values()]
    return "\n".join(lines)
