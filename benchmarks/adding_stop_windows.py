"""Where the 1997 adding row's nets stop: the sums |X1 + X2| around each trial's stop.

A trial of ``hochreiter1997-adding-t100`` stops after the first 2,000 sequences in a row that it
gets right (and a mean squared error below 0.01). This script draws each trial's training
sequences again, from its seed as the trial drew them, and prints per trial: where it stopped,
the largest |S| (S = X1 + X2) among the 2,000 sequences of its last window, the |S| of the
sequence just before that window (the last one it got wrong), and where the stream first held
2,000 sequences in a row with every |S| below 1.9:

    .venv/bin/python benchmarks/adding_stop_windows.py [FOLDER] [--trials N]

FOLDER is a results folder of the row (default docs/results/hochreiter1997-adding-t100); an
exact-RTRL sweep setting of the row has the same seeds and data.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from lstmgraph.experiments.data import data_rng
from lstmgraph.tasks import make_task

WINDOW = 2000
BOUND = 1.9


def sums(seed: int, count: int, length: int) -> np.ndarray:
    """|X1 + X2| of trial ``seed``'s first ``count`` training sequences (the task's own draws)."""
    task, rng = make_task("adding", {"length": length}), data_rng(seed, 0)
    return np.array([abs(4.0 * (task.sample(rng).targets[-1, 0] - 0.5)) for _ in range(count)])


def first_clean_window(values: np.ndarray, bound: float) -> int | None:
    """The sequences presented when ``WINDOW`` in a row first all had |S| below ``bound``."""
    above = np.concatenate([[-1], np.flatnonzero(values >= bound), [len(values)]])
    gaps = np.flatnonzero(np.diff(above) > WINDOW)
    return None if not len(gaps) else int(above[gaps[0]] + WINDOW + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path("docs/results/hochreiter1997-adding-t100"))
    parser.add_argument("--trials", type=int, default=10)
    arguments = parser.parse_args()
    settings = json.loads((arguments.folder / "experiment.json").read_text())
    length = settings["task_options"]["length"]
    rows = sorted((json.loads(line) for line in (arguments.folder / "trials.jsonl").read_text().splitlines()),
                  key=lambda row: row["seed"])[:arguments.trials]
    print(f"{arguments.folder} (T = {length}): |S| = |X1 + X2| of the training sequences, window {WINDOW}")
    print("seed  stopped after  largest |S| in the last window  |S| just before it  "
          f"first window with every |S| < {BOUND}")
    for row in rows:
        stop = row["presented"]
        values = sums(row["seed"], stop, length)
        clean = first_clean_window(values, BOUND)
        print(f"{row['seed']:4}  {stop:13,}  {values[stop - WINDOW:].max():30.3f}  {values[stop - WINDOW - 1]:18.3f}  "
              f"{clean if clean is None else f'{clean:,}':>36}")


if __name__ == "__main__":
    main()
