"""The reference row of a published ratio: a finding such as "as fast as standard LSTM" compares
a row's mean with another row's (``published["ratio_to"]``, `verdict.judge_ratio`).

That row's trials come from its results folder beside the judged one: first a sibling (the same
change applied to both rows, as in docs/results/no-shortcut/), then one beside the parent folder
(the paper row's own folder under docs/results). No link is followed to reach either. A row with
no such folder gets no ratio judged: its verdict says so rather than guessing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .catalogue import EXPERIMENTS
from .folder import READER_ADVICE, ResultsFolder
from .verdict import REFERENCE


def reference_folder(folder: Path, name: str) -> ResultsFolder | None:
    """Row ``name``'s results folder beside ``folder`` or beside its parent, None if neither
    holds a results.json; `folder.ResultsConflict` names a link or a damaged file on the way."""
    folder = Path(folder)
    for root in (folder.parent, folder.parent.parent):
        candidate = ResultsFolder(root / name, within=root, advice=READER_ADVICE)
        if candidate.reach() and os.path.lexists(candidate.file(candidate.RESULTS)):
            return candidate
    return None


def with_reference(results: dict[str, Any], folder: str | Path,
                   published: dict[str, Any] | None = None) -> dict[str, Any]:
    """``results`` (of the results folder ``folder``) with the solved trials of the row its
    ``published`` figures compare it with (by default those ``results`` records), for
    `verdict.judge`; ``results`` itself where they compare it with none or that row has no folder."""
    published = results["experiment"]["published"] if published is None else published
    name = published.get("ratio_to")
    if name not in EXPERIMENTS or name == results["experiment"]["name"]:  # (never a path a file names)
        return results
    found = reference_folder(Path(folder), name)
    if found is None:
        return results
    trials = found.read_results().get("trials") or []
    solved = [trial["to_success"] for trial in trials if trial["solved"]]
    return {**results, REFERENCE: {"name": name, "folder": found.path.as_posix(), "solved": solved}}
