"""The folders lstmgraph writes, each layout's own files named here once: a training run
directory (`training.rundir`), a results folder (`experiments.folder`) and a sweep folder
(`experiments.sweep_run`). A command that writes a file the user names (`run --outputs`,
`render -o`, `plot -o`) never replaces one of them (`check_not_own_file`).

This module imports nothing of the stages, so any command can ask it without importing the
modules that write those folders."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from .files import OutputError


class Layout(NamedTuple):
    """A kind of folder: ``what`` it is called in messages, the ``marks`` one of which such a
    folder holds from its start (``NAME/``: a folder), its own ``files``, and the folder of its
    ``members`` (a results folder's trials, a sweep's settings), one folder each."""

    what: str
    marks: tuple[str, ...]
    files: tuple[str, ...]
    members: str = ""

    def member(self, key: int | str) -> str:
        """The folder of one member, relative to this folder: ``trials/SEED``, ``settings/INDEX``."""
        return f"{self.members}/{key}"


RUN_DIRECTORY = Layout("run directory", ("run.json", "spec.yaml"),
                       ("spec.yaml", "run.json", "metrics.jsonl", "metrics.csv", "checkpoint.npz", "weights.npz",
                        "summary.json"))
RESULTS_FOLDER = Layout("results folder", ("experiment.json",),
                        ("experiment.json", "trials.jsonl", "results.json", "trials.csv", "results.png"), "trials")
SWEEP_FOLDER = Layout("sweep folder", ("sweep.json", "settings/"), ("sweep.json", "sweep.csv", "sweep.png"),
                      "settings")
LAYOUTS = (RUN_DIRECTORY, RESULTS_FOLDER, SWEEP_FOLDER)


def own_file_replaced(path: str | Path) -> tuple[Layout, Path] | None:
    """The layout and folder whose own file writing ``path`` would replace, or None: ``path``
    named like one of a layout's files, in a folder holding one of its marks. Links are resolved
    as `files.replaces` resolves them (a link at ``path`` itself is replaced, not written through)."""
    path = Path(path)
    for layout in LAYOUTS:
        if path.name in layout.files:
            folder = path.parent.resolve()
            if any(os.path.lexists(folder / mark.rstrip("/")) for mark in layout.marks):
                return layout, folder
    return None


def check_not_own_file(path: str | Path) -> None:
    """`OutputError` naming ``path`` if writing it would replace a file of a folder lstmgraph
    writes (`own_file_replaced`), before anything is written."""
    found = own_file_replaced(path)
    if found is not None:
        layout, folder = found
        raise OutputError(path, f"it is {Path(path).name} of the {layout.what} {folder}, which only the "
                                "command that wrote the folder replaces; choose another file")
