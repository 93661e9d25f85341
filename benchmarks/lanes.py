"""Trials side by side in one block of lanes against the same trials one after another.

    .venv/bin/python benchmarks/lanes.py gers2002-gts-peephole --trials 4 --steps 2000000
    .venv/bin/python benchmarks/lanes.py gers2000-cerg-forget --trials 4 --steps 300000
    .venv/bin/python benchmarks/lanes.py hochreiter1997-erg-3x2-lr0.5 --trials 4 --steps 1000000

Runs trials 0..N-1 of an experiment (stream or sequence protocol) for ``--steps`` training
steps each (or to their end), first each alone (a one-lane block), then all together
(`trial.advance_together`: one block of `specialised.WIDTH` lanes on the specialised kernel,
or of N lanes on the interpreter), on one thread, and prints the CPU time (`time.process_time`,
so that other work on the machine does not count) and training steps per second of both, and
whether every trial's row and weights came out identical. The kernels are loaded (and
compiled if needed) before the timing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.trial import advance_together


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300_000, help="training steps per trial (a cap)")
    parser.add_argument("--kernel", default="specialised", choices=["specialised", "interpreter"])
    args = parser.parse_args()
    experiment = find_experiment(args.experiment)
    plan = experiment.plan()
    seeds = list(range(args.trials))
    for count in (1, args.trials):  # load or compile the kernels first
        advance_together([experiment.trial(plan, 100 + s, 10, args.kernel) for s in range(count)], 10)

    alone = [experiment.trial(plan, seed, args.steps, args.kernel) for seed in seeds]
    start = time.process_time()
    for trial in alone:
        trial.run()
    alone_seconds = time.process_time() - start

    together = [experiment.trial(plan, seed, args.steps, args.kernel) for seed in seeds]
    start = time.process_time()
    while not all(trial.done for trial in together):
        advance_together(together)
    together_seconds = time.process_time() - start

    same = all(a.row["presented"] == b.row["presented"] and a.row["solved"] == b.row["solved"]
               and all(np.array_equal(a.engine.weights[k], b.engine.weights[k]) for k in a.engine.weights)
               for a, b in zip(alone, together))
    steps = sum(trial.row["steps"] for trial in alone)
    print(f"{args.experiment}: {args.trials} trials, {steps:,} training steps in all, kernel {args.kernel}")
    print(f"  one after another: {alone_seconds:8.2f} s  {steps / alone_seconds:12,.0f} training steps/s")
    print(f"  side by side:      {together_seconds:8.2f} s  {steps / together_seconds:12,.0f} training steps/s"
          f"  ({alone_seconds / together_seconds:.2f} x)")
    print(f"  rows and weights identical: {same}")
    for trial in together:
        row = trial.row
        print(f"    trial {row['seed']}: solved {row['solved']}, {row['presented']:,} {trial.unit}, "
              f"{row['steps']:,} steps")


if __name__ == "__main__":
    main()
