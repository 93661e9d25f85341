"""The reference row of a published ratio: a finding such as "as fast as standard LSTM" compares
a row's mean with another row's (``published["ratio_to"]``, `verdict.judge_ratio`).

That row's trials come from its results folder beside the judged one (the same change applied to
both rows, as in docs/results/no-shortcut/), else from the folder named for it in the results
root being read (docs/results for the docs' tables and the cause column: the paper row's own).
A change run on the judged row alone, a sweep's setting for one, is thus set against the other
row unchanged. No link is followed to reach either folder. A folder that is missing, not
finished, damaged, of another row or another task or protocol, short of its paper's trial
count, stopped by a cap or with fewer than two solved trials gives no ratio: the judgement says
which and why (`problem`), rather than guessing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .catalogue import EXPERIMENTS, with_current_reading
from .folder import READER_ADVICE, ResultsConflict, ResultsFolder
from .verdict import REFERENCE, cap_binds


def _places(folder: Path, root: Path | None) -> list[Path]:
    """Where the other row's folder is looked for: beside ``folder``, then in ``root``."""
    return list(dict.fromkeys([Path(folder).absolute().parent] + ([Path(root).absolute()] if root is not None else [])))


def reference_folder(folder: Path, name: str, root: Path | None = None) -> ResultsFolder | None:
    """Row ``name``'s results folder beside ``folder`` (finished or not: a sibling run part way
    is not passed over), else ``root``/``name``; None if there is neither. `folder.ResultsConflict`
    names a link or a file on the way."""
    for place in _places(folder, root):
        candidate = ResultsFolder(place / name, within=place, advice=READER_ADVICE)
        if candidate.reach():
            return candidate
    return None


def problem_with(results: dict[str, Any], judged: dict[str, Any], name: str, where: str) -> str | None:
    """Why the results of the folder ``where`` cannot stand for row ``name``'s beside the
    ``judged`` results, None if they can: the two rows must share their task and protocol."""
    experiment, summary = results["experiment"], results["summary"]
    if experiment["name"] != name:
        return f"{where} holds trials of {str(experiment['name'])[:80]}, not of {name}"
    for options in ("task_options", "protocol_options"):
        if experiment.get(options, {}) != judged["experiment"].get(options, {}):
            return f"{where} ran with other {options.replace('_', ' ')} than this folder's"
    if cap_binds(results):
        return f"{where} has a trial stopped by a cap (reproduce --max-steps)"
    if summary["trials"] < experiment["trials"]:
        return f"{where} holds {summary['trials']:,} of the row's {experiment['trials']:,} trials"
    solved = [trial["to_success"] for trial in results["trials"] if trial["solved"]]
    if len(solved) < 2:
        return f"{where} has {len(solved)} solved trial{'' if len(solved) == 1 else 's'}, too few for a mean's spread"
    if min(solved) <= 0:  # (a resample of such trials alone would divide by zero)
        return f"{where} has a trial solved after 0 {experiment['unit']}, so no ratio to it exists"
    return None


def with_reference(results: dict[str, Any], folder: str | Path, published: dict[str, Any] | None = None,
                   root: str | Path | None = None) -> dict[str, Any]:
    """``results`` (of the results folder ``folder``) with a record of the row its ``published``
    figures (by default those ``results`` records) compare it with: its name, its folder (beside
    ``folder``, else in ``root``), its solved trials, and the `problem_with` them (None if none).
    ``results`` itself where no ratio is published; never raises for that row's folder."""
    published = results["experiment"]["published"] if published is None else published
    name = published.get("ratio_to")
    if name not in EXPERIMENTS or name == results["experiment"]["name"]:  # (never a path a file names)
        return results
    record: dict[str, Any] = {"name": name, "folder": None, "solved": [], "problem": None}
    try:
        root = None if root is None else Path(root)
        found = reference_folder(Path(folder), name, root)
        if found is None:
            places = " or in ".join(map(str, _places(folder, root)))
            record["problem"] = f"no results folder of {name} beside this one (in {places})"
        elif not os.path.lexists(found.file(found.RESULTS)):
            record["folder"] = found.path.as_posix()
            record["problem"] = f"{record['folder']} holds no results.json yet (a run not finished)"
        else:
            theirs = with_current_reading(found.read_results())
            record["folder"] = found.path.as_posix()
            record["solved"] = [trial["to_success"] for trial in theirs["trials"] if trial["solved"]]
            record["problem"] = problem_with(theirs, results, name, record["folder"])
    except (ResultsConflict, OSError) as error:
        record["problem"] = f"{name}'s folder cannot be read ({error})"
    return {**results, REFERENCE: record}
