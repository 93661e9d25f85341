"""The schema of what a results folder holds: a trial's row (trials.jsonl, results.json) and
results.json, checked after they are read back (`folder.ResultsFolder`).

A row is `trial.result_row`'s: ``seed``, ``solved``, ``to_success``, ``presented``, ``steps``,
``diverged``, ``seconds`` and the protocol's own figures (a stream trial's ``class`` and
``score``; a sequence trial's test figures). Each check returns what is wrong, in words, or None.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import shown
from ..limits import MAX_TRIALS
from .protocols import ProtocolError, protocol_counting
from .verdict import REFERENCE

# MAX_TRIALS (limits.py): the most trials a run may ask for (`reproduce --trials`), so
# seeds are 0 .. MAX_TRIALS - 1.
__all__ = ["MAX_TRIALS", "MAX_COUNT", "ROW_KEYS", "check_row", "check_results"]
#: The largest count a row may hold (the compiled drivers count in int64).
MAX_COUNT = 2**62
_TEXT = 200

_COUNT, _FLAG, _NUMBER, _TEXT_OR_NONE = "a whole number >= 0", "true or false", "a finite number >= 0", "text or null"
_NUMBER_OR_NONE = "a finite number >= 0 or null"
#: Every key a row may hold, with what its value must be.
ROW_KEYS: dict[str, str] = {
    "seed": _COUNT, "solved": _FLAG, "to_success": _COUNT, "presented": _COUNT, "steps": _COUNT,
    "diverged": _FLAG, "seconds": _NUMBER, "cpu_seconds": _NUMBER, "score": _NUMBER, "class": _TEXT_OR_NONE,
    "test_wrong": _NUMBER, "test_mse": _NUMBER_OR_NONE, "capped": _FLAG,  # (test_mse null: errors overflowed)
}
REQUIRED = ("seed", "solved", "to_success", "presented", "steps", "seconds")


def _fits(value: Any, wanted: str) -> bool:
    if wanted == _COUNT:
        return type(value) is int and 0 <= value <= MAX_COUNT
    if wanted == _FLAG:
        return type(value) is bool
    if wanted in (_NUMBER, _NUMBER_OR_NONE):
        return (value is None and wanted == _NUMBER_OR_NONE) or (
            type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1e300)
    return value is None or (type(value) is str and len(value) <= _TEXT)


def _scalar(value: Any) -> bool:
    """A value another version's row may add: a short text, a bounded number, a flag, null."""
    return (value is None or type(value) is bool or (type(value) is str and len(value) <= _TEXT)
            or (type(value) in (int, float) and math.isfinite(value) and abs(value) <= 1e300))


def check_row(row: Any, protocol: Any, limit: int | None = None) -> str | None:
    """What is wrong with ``row`` as a finished trial's row of ``protocol`` (a registered protocol
    class or instance; it names the classes a row falls into): a JSON object with every required
    key, each of its type, a seed below `MAX_TRIALS`, ``to_success`` set exactly when solved and
    at most ``presented``, ``presented`` at most ``limit`` (the protocol's, where given), the
    protocol's class; None if nothing is."""
    if not isinstance(row, dict):
        return f"expected a trial's row (a JSON object), found {type(row).__name__}"
    missing = [key for key in REQUIRED if key not in row]
    if missing:
        return f"a row without {', '.join(missing)}"
    for key, value in row.items():
        wanted = ROW_KEYS.get(key)
        if key == "to_success" and value is None:
            continue
        if wanted is not None and not _fits(value, wanted):
            return f"{key} must be {wanted}{' (or null)' if key == 'to_success' else ''}, not {shown(value, 40)}"
        if wanted is None and not _scalar(value):
            return f"{key[:40]!r} must be a short text, a number, true, false or null"
    if row["seed"] >= MAX_TRIALS:
        return f"seed {row['seed']:,} is beyond the {MAX_TRIALS:,} trials a run may hold"
    if row["solved"] != (row["to_success"] is not None):
        return "to_success must be set exactly when solved is true"
    if row["to_success"] is not None and row["to_success"] > row["presented"]:
        return f"to_success {row['to_success']:,} is more than presented {row['presented']:,}"
    if limit is not None and row["presented"] > limit:
        return f"presented {row['presented']:,} is more than the {limit:,} this row's protocol presents: " \
               "a row of another experiment"
    classes = tuple(protocol.classes)
    label = row.get("class")
    if label is not None and label not in classes:
        return f"class {label!r}: a row of another protocol's experiment (this row's " \
               f"{protocol.kind} trials' classes: {', '.join(classes) or 'none'})"
    if classes and ("score" not in row or label is None):
        return f"a row without its class and score: not a row of a {protocol.kind} protocol's trial"
    return None



def _published_problem(published: dict[str, Any]) -> str | None:
    """What is wrong with a results.json's published figures: each a number or a short text,
    the ones the verdicts read of their kind (a rate 0-100, a mean or ratio > 0, a ratio with the
    row it is to); None if nothing is."""
    for key, value in published.items():
        if not _scalar(value) or type(value) is bool:
            return f"{key[:40]} must be a number (at most 1e300 in size) or a short text"
        number = type(value) in (int, float)
        if key.endswith("_percent") and not (number and 0 <= value <= 100):
            return f"{key[:40]} must be a number from 0 to 100, not {shown(value, 40)}"
        if key in ("mean_to_success", "mean_ratio") and not (number and value > 0):
            return f"{key} must be a number > 0, not {shown(value, 40)}"
        if key in ("test_wrong", "test_mse") and not (number and value >= 0):
            return f"{key} must be a number >= 0, not {shown(value, 40)}"
        if key in ("ratio_to", "finding", "range") and type(value) is not str:
            return f"{key} must be a text, not {shown(value, 40)}"
    if ("ratio_to" in published) != ("mean_ratio" in published):
        return "ratio_to and mean_ratio go together: a ratio of means and the row it is to"
    return None


def _type_problem(mapping: dict[str, Any], keys: dict[str, tuple[type, ...]], where: str) -> str | None:
    for key, types in keys.items():
        value = mapping.get(key)
        if key not in mapping or type(value) not in types:
            return f"{where}{key} must be {' or '.join(t.__name__ for t in types)}, not {shown(value, 40)}"
    return None


def check_results(results: Any) -> str | None:
    """What is wrong with ``results`` as results.json's content (`summary.results_of`): an
    object with ``experiment`` (its name, paper, counted unit of a registered protocol, trial
    count and published figures), ``summary``, ``trials`` (rows, each checked, seeds unique,
    as many as the summary counts) and ``budget_steps``; None if nothing is."""
    if not isinstance(results, dict):
        return "expected a JSON object with experiment, summary, trials and budget_steps"
    problem = _type_problem(results, {"experiment": (dict,), "summary": (dict,), "trials": (list,)}, "")
    if problem:
        return problem
    experiment, summary = results["experiment"], results["summary"]
    problem = (_type_problem(experiment, {"name": (str,), "paper": (str,), "unit": (str,), "trials": (int,),
                                          "published": (dict,)}, "experiment.")
               or _type_problem(summary, {"trials": (int,), "seconds_total": (int, float)}, "summary."))
    if problem:
        return problem
    if not 1 <= experiment["trials"] <= MAX_TRIALS:
        return f"experiment.trials must be from 1 to {MAX_TRIALS:,}, not {shown(experiment['trials'], 40)}"
    budget = results.get("budget_steps")
    if budget is not None and not (type(budget) is int and 1 <= budget <= MAX_COUNT):
        return f"budget_steps must be null or a whole number from 1 to {MAX_COUNT:,}, not {shown(budget, 40)}"
    try:
        protocol = protocol_counting(experiment["unit"])
    except ProtocolError as error:
        return f"experiment.unit: {error}"
    if REFERENCE in results:  # (`reference.with_reference` adds it in memory: no file holds it)
        return f"{REFERENCE!r} is not a key results.json holds"
    problem = _published_problem(experiment["published"])
    if problem:
        return f"experiment.published.{problem}"
    seen: dict[int, int] = {}
    for index, row in enumerate(results["trials"]):
        problem = check_row(row, protocol)
        if problem is None and row["seed"] in seen:
            problem = f"trial {row['seed']}'s row again (its first is trials[{seen[row['seed']]}])"
        if problem:
            return f"trials[{index}]: {problem}"
        seen[row["seed"]] = index
    if summary["trials"] != len(results["trials"]):
        return f"summary.trials is {shown(summary['trials'], 40)}, but trials holds {len(results['trials'])} rows"
    for key in ("task_options", "protocol_options"):
        if not isinstance(experiment.get(key, {}), dict):
            return f"experiment.{key} must be an object"
    return None
