"""Committed trials replay: rerun some seeds of a committed results folder and compare rows.

    .venv/bin/python benchmarks/replay.py docs/results/hochreiter1997-erg-3x2-lr0.5 --seeds 0 1
    .venv/bin/python benchmarks/replay.py docs/sweeps/hochreiter1997-temporal-order-6b/exact-gradient/settings/0

Each seed runs straight through in this process from the folder's own experiment.json (its
spec as run, task and protocol settings, step cap), with the kernel the folder's run chose,
and its row is compared with the committed one on every figure a row holds (to_success,
presented, steps, diverged, score, class, test_wrong, test_mse; not the CPU seconds). Prints
one line per seed and exits 1 if any row differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lstmgraph.experiments.experiment import Experiment
from lstmgraph.experiments.folder_settings import PROTOCOL_SETTINGS
from lstmgraph.experiments.protocols import protocol_counting, protocol_from_settings
from lstmgraph.experiments.trial import new_trial

COMPARED = ("solved", "to_success", "presented", "steps", "diverged", "score", "class", "test_wrong", "test_mse")


def committed_rows(folder: Path) -> dict[int, dict]:
    if (folder / "results.json").exists():
        rows = json.loads((folder / "results.json").read_text(encoding="utf-8"))["trials"]
    else:
        rows = [json.loads(line) for line in (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()]
    return {row["seed"]: row for row in rows}


def protocol_of(settings: dict):
    """The protocol as the folder ran it: its own record (``protocol_settings``); for a folder
    written before that was recorded, the current catalogue row's with its recorded options, if
    its words are the folder's (a sweep setting's folder names its row and then its values:
    ``ROW [key=value, ...]``)."""
    from lstmgraph.experiments import find_experiment

    if PROTOCOL_SETTINGS in settings:
        return protocol_from_settings(settings[PROTOCOL_SETTINGS])
    row = settings["name"].split(" [")[0]
    experiment = find_experiment(row).with_protocol_options(settings.get("protocol_options", {}))
    if experiment.protocol.describe() != settings["protocol"]:
        raise SystemExit(f"the catalogue's {settings['name']} protocol is not the one the folder ran:\n"
                         f"  now: {experiment.protocol.describe()}\n  ran: {settings['protocol']}")
    if protocol_counting(settings["unit"]) is not type(experiment.protocol):
        raise SystemExit("the folder counts another unit than the catalogue's row")
    return experiment.protocol


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    arguments = parser.parse_args()
    settings = json.loads((arguments.folder / "experiment.json").read_text(encoding="utf-8"))
    rows, protocol = committed_rows(arguments.folder), protocol_of(settings)
    plan = Experiment.plan_of(settings["spec_data"])
    differs = 0
    for seed in arguments.seeds:
        start = time.process_time()
        trial = new_trial(plan, settings["task"], settings["task_options"], protocol, seed,
                          settings.get("budget_steps"), "specialised")
        row = trial.run()
        committed = rows[seed]
        changed = {key: (committed.get(key), row.get(key)) for key in COMPARED if committed.get(key) != row.get(key)}
        differs += bool(changed)
        verdict = "same row" if not changed else f"DIFFERS {changed}"
        print(f"{arguments.folder.name} seed {seed}: {verdict} ({row['presented']:,} {protocol.counted}, "
              f"{row['steps']:,} steps, {time.process_time() - start:.1f} s)", flush=True)
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
