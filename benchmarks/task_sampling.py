"""Data-drawing cost of the catalogue's stream experiments (CERG, CNTO, PFG, GTS, MSD), in us per step.

    nice -n 10 .venv/bin/python benchmarks/task_sampling.py --steps 200000 --repeat 3

A CERG trial draws millions of steps (10 test streams of up to 10^5 steps per test phase,
training streams of up to 10^6), so drawing can cost more than the compiled net's training
(about 1.5 us/step) or testing (about 0.5 us/step). For each distinct task of those
experiments this prints the time of ``task.sample`` alone and of ``StreamData.ensure`` (the
same draws, plus collecting and concatenating the arrays), each the best of ``--repeat`` runs
from the same seed.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from lstmgraph.experiments import EXPERIMENTS, StreamProtocol
from lstmgraph.experiments.streams import StreamData
from lstmgraph.tasks import Task


def sample_seconds(task: Task, steps: int, seed: int) -> tuple[float, int]:
    """Time of drawing sequences with ``task.sample`` until ``steps`` steps; (seconds, steps drawn)."""
    rng, drawn = np.random.default_rng(seed), 0
    start = time.perf_counter()
    while drawn < steps:
        drawn += len(task.sample(rng))
    return time.perf_counter() - start, drawn


def ensure_seconds(task: Task, steps: int, seed: int) -> tuple[float, int]:
    """Time of ``StreamData.ensure(steps, "steps")`` on fresh data; (seconds, steps drawn)."""
    data = StreamData(task, np.random.default_rng(seed))
    start = time.perf_counter()
    data.ensure(steps, "steps")
    return time.perf_counter() - start, len(data.inputs)


def best_us_per_step(measure, task: Task, steps: int, seed: int, repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``measure``, in microseconds per step drawn."""
    return min(seconds / drawn for seconds, drawn in (measure(task, steps, seed) for _ in range(repeat))) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    tasks: dict[str, tuple[str, Task]] = {}
    for experiment in EXPERIMENTS.values():
        if isinstance(experiment.protocol, StreamProtocol):
            key = f"{experiment.task} {json.dumps(experiment.task_options, sort_keys=True)}"
            tasks.setdefault(key, (experiment.name, experiment.make_task()))
    print(f"{'sample':>8} {'ensure':>8}  us/step: task, options (first experiment using it)")
    for key, (name, task) in tasks.items():
        sample = best_us_per_step(sample_seconds, task, arguments.steps, arguments.seed, arguments.repeat)
        ensure = best_us_per_step(ensure_seconds, task, arguments.steps, arguments.seed, arguments.repeat)
        print(f"{sample:8.2f} {ensure:8.2f}  {key} ({name})")


if __name__ == "__main__":
    main()
