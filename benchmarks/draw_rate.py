"""How fast the host draws a stream protocol's data: the bound on a GPU population's speed,
since each trial's streams are drawn on the host from its seed (docs/gpu.md).

    python benchmarks/draw_rate.py [--seconds 3]

For each stream row, one trial's training data drawn as the drivers draw it (`StreamData.ensure`,
refills of `streams.REFILL` steps) for ``--seconds``: steps drawn a second on one core, and the
bytes a step takes (inputs and targets, float64), which a GPU launch then copies to the device.
"""

from __future__ import annotations

import argparse
import time

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.data import StreamData, data_rng
from lstmgraph.experiments.streams import REFILL

ROWS = ("gers2000-cerg-forget", "gers2002-gts-peephole", "gers2002-pfg-cos-f10-peephole")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    print("| row | steps drawn a second, one core | bytes a step |\n|---|---|---|")
    for name in ROWS:
        experiment = find_experiment(name)
        task = experiment.trial(experiment.plan(), 0, 1, "interpreter", "cpu").task
        source = StreamData(task, data_rng(0, 0))
        start, drawn = time.perf_counter(), 0
        while time.perf_counter() - start < options.seconds:
            source.position = len(source.inputs)  # all read: the next refill draws anew
            source.ensure(REFILL["steps"], "steps")
            drawn += len(source.inputs)
        rate = drawn / (time.perf_counter() - start)
        print(f"| {name} | {rate:,.0f} | {8 * (source.inputs.shape[1] + source.targets.shape[1])} |")


if __name__ == "__main__":
    main()
