"""Weights: one array per connection, with a leading population axis (one row per trial).

Initialisation follows the spec's ``init`` (papers' uniform ranges, per-connection constants
and per-row values such as the per-block gate biases); trial i of a population draws from
its own generator seeded ``seeds[i]``, so a population equals its trials run one by one.
Weights are saved as ``.npz`` (no pickle), one array per connection named ``source->target``.
"""

from __future__ import annotations

import json
from collections import abc
from pathlib import Path
from typing import Sequence

import numpy as np

from ..arrays import ArrayFileError, npz_bytes, numbers, read_npz
from ..errors import cut, shown
from ..files import write_atomically
from ..graph.units import Connection
from ..limits import MAX_TRIALS, is_whole_number
from ..plan import Plan, require_plan

Weights = dict[str, np.ndarray]

WEIGHTS_FORMAT = "lstmgraph-weights-1"


class WeightsError(Exception):
    """Weights, or a weights file, that do not fit the plan."""


def check_weights(plan: Plan, weights: Weights) -> int:
    """The number of trials of ``weights``; `WeightsError` unless they hold every connection of
    ``plan`` (the fixed ones too), nothing else, each ``(trials, *shape)`` with one ``trials``."""
    if not isinstance(weights, dict):
        raise WeightsError(f"weights are a dict of connection name -> (trials, *shape) array, not a "
                           f"{type(weights).__name__}")
    missing = [c.name for c in plan.connections if c.name not in weights]
    unknown = sorted(set(weights) - {c.name for c in plan.connections})
    if missing or unknown:
        raise WeightsError(f"the weights do not fit {misfit(plan, missing, unknown)}")
    trials = None
    for connection in plan.connections:
        shape = np.shape(weights[connection.name])
        if shape[1:] != connection.shape or len(shape) == 0 or shape[0] < 1 or shape[0] != (trials or shape[0]):
            expected = f"({trials or 'trials'}, {', '.join(map(str, connection.shape))})"
            raise WeightsError(f"the weights of '{connection.name}' have shape {shape}, expected {expected}")
        trials = shape[0]
    return trials


def initial_weights(plan: Plan, seeds: int | Sequence[int] | None = None) -> Weights:
    """Every connection's initial weights, shape (trials, *connection.shape).

    ``seeds``: one seed per trial (default: the spec's ``init.seed``, one trial).
    """
    require_plan(plan, "initial_weights")
    if seeds is None:
        seeds = [plan.init.seed]
    elif isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        seeds = [int(seeds)]
    seeds = _checked_seeds(seeds)
    per_trial = [_draw(plan, np.random.default_rng(seed)) for seed in seeds]
    return {c.name: np.stack([trial[c.name] for trial in per_trial]) for c in plan.connections}


def _checked_seeds(seeds) -> list[int]:
    """``seeds`` as a list of whole numbers >= 0, one per trial, at most `MAX_TRIALS`; a
    `TypeError` or `ValueError` saying what was given otherwise."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (abc.Sequence, np.ndarray)):
        raise TypeError(f"seeds are a whole number or a list of them, one per trial, not a {type(seeds).__name__}")
    bad = [seed for seed in seeds if not is_whole_number(seed)]
    if bad or not 1 <= len(seeds) <= MAX_TRIALS:
        raise ValueError(f"seeds are 1 to {MAX_TRIALS:,} whole numbers >= 0, one per trial; got "
                         + (f"{bad[0]!r}" if bad else f"{len(seeds):,} seeds"))
    return [int(seed) for seed in seeds]


def _draw(plan: Plan, rng: np.random.Generator) -> dict[str, np.ndarray]:
    default_low, default_high = plan.init.uniform
    weights = {}
    for connection in plan.connections:
        weights[connection.name] = _initial(connection, rng, default_low, default_high)
    return weights


def _initial(connection: Connection, rng: np.random.Generator, low: float, high: float) -> np.ndarray:
    init = connection.init
    shape = connection.shape
    if init is None or init.uniform is not None:
        if init is not None:
            low, high = init.uniform
        return rng.uniform(low, high, size=shape)
    if init.constant is not None:
        return np.full(shape, float(init.constant))
    values = np.asarray(init.values, dtype=np.float64)
    if values.size == shape[0] and len(shape) > 1:
        return np.repeat(values[:, None], shape[1], axis=1).reshape(shape)
    return values.reshape(shape)


def population(weights: Weights) -> int:
    return next(iter(weights.values())).shape[0]


def trial(weights: Weights, index: int) -> Weights:
    """The weights of one trial, keeping a population axis of 1."""
    return {name: values[index:index + 1].copy() for name, values in weights.items()}


def flatten(plan: Plan, weights: Weights) -> np.ndarray:
    """The trainable weights as one vector per trial, laid out by `plan.parameters`; ``weights``
    (or gradients) must hold every trainable connection, `WeightsError` otherwise."""
    missing = [slot.connection for slot in plan.parameters if slot.connection not in weights]
    if missing:
        raise WeightsError(f"the weights do not fit {misfit(plan, missing)}")
    trials = population(weights)
    for slot in plan.parameters:
        if np.shape(weights[slot.connection]) != (trials,) + slot.shape:
            raise WeightsError(f"the weights of '{slot.connection}' have shape {np.shape(weights[slot.connection])}, "
                               f"expected {(trials,) + slot.shape}")
    return np.concatenate([weights[slot.connection].reshape(population(weights), -1)
                           for slot in plan.parameters], axis=1)


def unflatten(plan: Plan, vector: np.ndarray, template: Weights) -> Weights:
    """Weights with the trainable ones taken from ``vector`` (trials, n_parameters), the others
    from ``template``; `ValueError` for a vector of another shape."""
    if np.ndim(vector) != 2 or np.shape(vector)[1] != plan.n_parameters:
        raise ValueError(f"the vector has shape {np.shape(vector)}, expected (trials, {plan.n_parameters}): "
                         f"(trials, n_parameters) as flatten gives")
    result = {name: values.copy() for name, values in template.items()}
    for slot in plan.parameters:
        block = vector[:, slot.offset:slot.offset + slot.size]
        result[slot.connection] = block.reshape((vector.shape[0],) + slot.shape).copy()
    return result


def save_weights(path: str | Path, plan: Plan, weights: Weights) -> Path:
    """Write weights as .npz: one array per connection; shapes (*shape) for a single network,
    (trials, *shape) for a population. Written atomically."""
    path = Path(path)
    write_atomically(path, weights_file_bytes(plan, weights))
    return path


def weights_file_bytes(plan: Plan, weights: Weights) -> bytes:
    """The content of `save_weights`'s file (a worker sends it to the process that writes)."""
    trials = check_weights(plan, weights)
    arrays = {name: (values[0] if trials == 1 else values) for name, values in weights.items()}
    meta = {"format": WEIGHTS_FORMAT, "network": plan.name, "trials": trials,
            "parameters": plan.n_parameters}
    return npz_bytes({"__meta__": np.array(json.dumps(meta)), **arrays})


#: Bytes the ``__meta__`` member of a weights file may declare (save_weights writes about 100).
MAX_META_BYTES = 1 << 16
#: Bytes an .npy member may declare beyond its values: its header.
NPY_HEADER_BYTES = 1 << 16


def _fitting_members(path: Path, plan: Plan, declared: dict[str, int]) -> None:
    """`WeightsError` unless the archive's members, by name and declared size (its directory,
    nothing unpacked), can be ``plan``'s weights: every connection's but fixed internal ones,
    no other but ``__meta__``, none larger than `MAX_TRIALS` networks' values of float64."""
    missing = [c.name for c in plan.connections if c.name not in declared and not c.internal]
    unknown = sorted(set(declared) - {c.name for c in plan.connections} - {"__meta__"})
    if missing or unknown:
        raise WeightsError(f"{path}: does not fit {misfit(plan, missing, unknown)}")
    most = {c.name: MAX_TRIALS * 8 * int(np.prod(c.shape)) + NPY_HEADER_BYTES for c in plan.connections}
    most["__meta__"] = MAX_META_BYTES
    for name, size in declared.items():
        if size > most[name]:
            raise WeightsError(f"{path}: '{name}' unpacks to {size:,} bytes, more than {most[name]:,} (the "
                               f"values of {MAX_TRIALS:,} networks); not a weights file save_weights writes")


def misfit(plan: Plan, missing: Sequence[str], unknown: Sequence[str] = ()) -> str:
    """What weights that do not fit ``plan`` lack or add, after "do not fit": the network, the
    connections ``missing`` and the names ``unknown`` to it, the first 10 of each (names cut to 64 characters) and how many more."""
    def listed(names: Sequence[str], count: int = 10) -> str:
        return ", ".join(cut(name, 64) for name in names[:count]) + (
            f" and {len(names) - count:,} more" if len(names) > count else "")

    return (f"network '{plan.name}'" + (f"; missing: {listed(missing)}" if missing else "")
            + (f"; unknown: {listed(unknown)}" if unknown else ""))


def load_weights(path: str | Path, plan: Plan) -> Weights:
    """Read weights written by `save_weights` (or by hand: one array per connection name), each
    of the connection's shape, real and finite; `WeightsError` names the file and what is wrong.
    A file without ``__meta__`` holds one network, or a population where every array is
    ``(trials, *shape)`` with one ``trials``."""
    path = Path(path)
    try:
        stored = read_npz(path, select=lambda declared: _fitting_members(path, plan, declared))
        meta = json.loads(str(stored.pop("__meta__"))) if "__meta__" in stored else {"trials": None}
        trials = meta.get("trials", 1)
    except ArrayFileError as error:
        raise WeightsError(str(error)) from None
    except (ValueError, TypeError, AttributeError, RecursionError):  # (RecursionError: nested too deep)
        raise WeightsError(f"{path}: '__meta__' is not the JSON object save_weights writes") from None
    stacked, said = trials != 1, "'__meta__' says"
    if trials is None:  # no __meta__: a population where every array has one leading trials axis
        (trials, stacked), said = _stacked_trials(plan, stored), "the arrays' first axis gives"
    if type(trials) is not int or not 1 <= trials <= MAX_TRIALS:
        raise WeightsError(f"{path}: {said} {shown(trials, 40)} trials; expected a whole number "
                           f"from 1 to {MAX_TRIALS:,} (the file save_weights writes)")
    weights = {}
    for connection in plan.connections:
        if connection.name not in stored:  # fixed internal connections may be left out: their constant
            weights[connection.name] = np.stack([_initial(connection, None, 0.0, 0.0)] * trials)
            continue
        try:  # real and finite: no run saves other weights
            values = numbers(path, f"'{connection.name}'", stored[connection.name])
        except ArrayFileError as error:
            raise WeightsError(str(error)) from None
        expected = (trials,) + connection.shape if stacked else connection.shape
        if values.shape != expected:
            raise WeightsError(f"{path}: '{connection.name}' has shape {values.shape}, "
                               f"expected {expected}")
        weights[connection.name] = values if stacked else values[None]
    return weights


def _stacked_trials(plan: Plan, stored: dict[str, np.ndarray]) -> tuple[int, bool]:
    """(trials, True) where every stored connection's array is (trials, *shape) with one trials;
    else (1, False): one network, each array of its connection's shape."""
    shapes = {c.name: c.shape for c in plan.connections}
    leading = {values.shape[0] if values.shape[1:] == shapes[name] and values.ndim == len(shapes[name]) + 1 else None
               for name, values in stored.items() if name in shapes}
    return (leading.pop(), True) if len(leading) == 1 and None not in leading else (1, False)
