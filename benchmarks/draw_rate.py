"""How fast the host draws a stream protocol's data: a CPU trial's share of drawing, and what
bounded a GPU population while its streams were drawn on the host (now drawn on the device,
`experiments.gpu_data`; the host still draws where ``draws_on_device`` is off: docs/gpu.md).

    python benchmarks/draw_rate.py [--seconds 3] [--trials 64]

For each stream row, ``--trials`` trials' training data refilled as the GPU drivers refill them
(`streams.refill`: `StreamData.ensure` of `data.REFILL` steps each, `data.draw_all`), on one
thread and on every core (`data.GPU_DRAW_THREADS`), for about ``--seconds`` each: trial-steps
drawn a second, and the bytes a step takes (inputs and targets, float64), which each GPU launch
copies to the device; and whether the drivers use the threads for the task
(`data.gpu_draw_threads`).
"""

from __future__ import annotations

import argparse
import time
from functools import partial

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.data import GPU_DRAW_THREADS, StreamData, data_rng, draw_all, gpu_draw_threads
from lstmgraph.experiments.data import REFILL

ROWS = ("gers2000-cerg-forget", "gers2002-gts-peephole", "gers2002-pfg-cos-f10-peephole")


def steps_per_second(task, trials: int, threads: int, seconds: float) -> tuple[float, int]:
    sources = [StreamData(task, data_rng(seed, 0)) for seed in range(trials)]
    start, drawn = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for source in sources:
            source.position = len(source.inputs)  # all read: the next refill draws anew
        draw_all([partial(source.ensure, REFILL["steps"], "steps") for source in sources], threads)
        drawn += sum(len(source.inputs) for source in sources)
    return drawn / (time.perf_counter() - start), 8 * (sources[0].inputs.shape[1] + sources[0].targets.shape[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--trials", type=int, default=64)
    options = parser.parse_args()
    print(f"| row | trial-steps drawn a second, one thread | {GPU_DRAW_THREADS} threads | bytes a step "
          "| the GPU drivers draw in threads |\n|---|---|---|---|---|")
    for name in ROWS:
        experiment = find_experiment(name)
        task = experiment.trial(experiment.plan(), 0, 1, "interpreter", "cpu").task
        one, size = steps_per_second(task, options.trials, 1, options.seconds)
        many, _ = steps_per_second(task, options.trials, GPU_DRAW_THREADS, options.seconds)
        print(f"| {name} | {one:,.0f} | {many:,.0f} | {size} | {'yes' if gpu_draw_threads([task]) > 1 else 'no'} |")


if __name__ == "__main__":
    main()
