"""How fast the device draws a population's data (`experiments.gpu_data.DeviceStreams`), against
the host's rate from benchmarks/draw_rate.py.

    python benchmarks/gpu_draws.py [--trials 2000] [--refills 5] [--rows ROW ...]

For each row's training source, ``--trials`` trials' data drawn on the device: one refill that
compiles the kernel (timed apart), then ``--refills`` refills, each with every trial's cursor at
the end of its rows, so each draws a whole `gpu_data.DEVICE_REFILL` anew. Prints the rows drawn
a second (trial-steps), the time of a refill, and the device memory the population's rows take.
In numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) it checks the script on a few trials.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lstmgraph.engine.gpu.population import cuda_module
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.data import StreamData, data_rng
from lstmgraph.experiments.gpu_data import DeviceStreams, device_rows

ROWS = ("gers2000-cerg-forget", "gers2000-cnto-forget", "gers2002-gts-peephole", "hochreiter1997-adding-t100")


def draw_rate(name: str, trials: int, refills: int) -> str:
    cuda = cuda_module()
    experiment = find_experiment(name)
    task = experiment.trial(experiment.plan(), 0, 1, "interpreter", "cpu").training.task
    unit = getattr(experiment.protocol, "unit", "sequences")
    sources = [StreamData(task, data_rng(seed, 0)) for seed in range(trials)]
    streams = DeviceStreams(cuda, sources, device_rows(sources), [unit] * trials)
    everyone = np.ones(trials, dtype=np.bool_)
    start = time.perf_counter()
    streams.refill(everyone, np.zeros(trials, dtype=np.int64))
    cuda.synchronize()
    compiled = time.perf_counter() - start
    drawn, seconds = 0, 0.0
    for _ in range(refills):
        rows = streams.at.copy_to_host()[:, 2]  # every cursor at its rows' end: all drawn anew
        start = time.perf_counter()
        streams.refill(everyone, rows.copy())
        cuda.synchronize()
        seconds += time.perf_counter() - start
        drawn += int(streams.at.copy_to_host()[:, 2].sum())
    task_bytes = 8 * task.n_inputs + 8 * streams.draws.planes * task.n_outputs + 9
    return (f"| {name} | {trials:,} | {compiled:.1f} s | {drawn / seconds:,.0f} | {seconds / refills * 1e3:,.1f} ms "
            f"| {trials * streams.stride * task_bytes / 1e9:,.2f} GB |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--refills", type=int, default=5)
    parser.add_argument("--rows", nargs="+", default=list(ROWS))
    options = parser.parse_args()
    print("| row | trials | first refill (compiles) | trial-steps drawn a second | a refill | rows on the device |\n"
          "|---|---|---|---|---|---|", flush=True)
    for name in options.rows:
        print(draw_rate(name, options.trials, options.refills), flush=True)


if __name__ == "__main__":
    main()
