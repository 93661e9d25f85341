"""One experiment three ways: 1 local worker, 2 local workers, and a local Dask cluster of two
single-thread worker processes (the `--cluster` code path); the trials must agree, and the wall
times give the speed-up of a second worker.

    .venv/bin/python benchmarks/cluster_run.py gers2000-nto-standard --out /tmp/cluster-run \\
        --json docs/results/cluster-run.json --doc docs/cluster.md

Writes the figures as JSON and, with ``--doc``, the table between the ``cluster-run`` markers of
docs/cluster.md (generated, never typed). Run it on a machine with nothing else running.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.schedule import run_experiment

MARKER = "<!-- cluster-run: the figures are filled in by benchmarks/cluster_run.py -->"


def _trials(out: Path) -> list[dict[str, str]]:
    with (out / "trials.csv").open() as stream:
        return [{key: value for key, value in row.items() if key != "seconds"} for row in csv.DictReader(stream)]


def _timed(name: str, trials: int, budget: int | None, out: Path, **where: Any) -> dict[str, Any]:
    start = time.perf_counter()
    results = run_experiment(find_experiment(name), trials, out=out, budget_steps=budget, **where)
    return {"wall_seconds": round(time.perf_counter() - start, 1),
            "cpu_seconds_in_trials": results["summary"]["seconds_total"], "summary": results["summary"]}


def measure(name: str, trials: int, budget: int | None, out: Path) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    runs = {"1 local worker": _timed(name, trials, budget, out / "jobs1", jobs=1),
            "2 local workers": _timed(name, trials, budget, out / "jobs2", jobs=2)}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        runs["Dask cluster, 2 workers"] = _timed(name, trials, budget, out / "dask", jobs=1, cluster=client)
    reference = _trials(out / "jobs1")
    return {"experiment": name, "trials": trials, "budget_steps": budget, "machine": f"{platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores", "runs": runs,
            "same_trials": {label: _trials(out / folder) == reference
                            for label, folder in (("2 local workers", "jobs2"), ("Dask cluster, 2 workers", "dask"))},
            "speedup_2_local_workers": round(runs["1 local worker"]["wall_seconds"]
                                             / runs["2 local workers"]["wall_seconds"], 2),
            "speedup_dask_2_workers": round(runs["1 local worker"]["wall_seconds"]
                                            / runs["Dask cluster, 2 workers"]["wall_seconds"], 2)}


def table(figures: dict[str, Any]) -> str:
    cap = f", each capped at {figures['budget_steps']:,} steps" if figures["budget_steps"] else ""
    lines = [f"`{figures['experiment']}`, {figures['trials']} trials{cap}, on {figures['machine']}:", "",
             "| run | wall time (s) | trial compute (s) | speed-up | trials equal to 1 worker's |",
             "|---|---|---|---|---|"]
    base = figures["runs"]["1 local worker"]["wall_seconds"]
    for label, run in figures["runs"].items():
        same = "(reference)" if label == "1 local worker" else ("yes" if figures["same_trials"][label] else "NO")
        lines.append(f"| {label} | {run['wall_seconds']:,.1f} | {run['cpu_seconds_in_trials']:,.1f} | "
                     f"{base / run['wall_seconds']:.2f} | {same} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--trials", type=int, help="default: the paper's count")
    parser.add_argument("--max-steps", type=int, help="cap each trial (a quick look)")
    parser.add_argument("--out", type=Path, required=True, help="a folder for the three results folders")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--doc", type=Path, help="put the table into this Markdown file after its marker")
    arguments = parser.parse_args()
    trials = arguments.trials or find_experiment(arguments.experiment).trials
    figures = measure(arguments.experiment, trials, arguments.max_steps, arguments.out)
    text = table(figures)
    print(text)
    if arguments.json:
        arguments.json.write_text(json.dumps(figures, indent=2) + "\n")
    if arguments.doc:
        document = arguments.doc.read_text()
        head = document.split(MARKER)[0]
        arguments.doc.write_text(head + MARKER + "\n\n" + text)


if __name__ == "__main__":
    main()
