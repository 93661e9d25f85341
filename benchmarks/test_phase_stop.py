"""Test phases that end at their first failing stream, against the plain protocol's full phases.

    .venv/bin/python benchmarks/test_phase_stop.py gers2000-cerg-forget-decay \
        docs/results/gers2000-cerg-forget-decay/trials/51/checkpoint.npz --streams 200
    .venv/bin/python benchmarks/test_phase_stop.py gers2002-msd-f10-peephole --seed 0 --streams 200000

Runs one trial of a stream experiment for ``--streams`` more training streams (from a
`reproduce` checkpoint, e.g. a net that hovers near the test, or from the start), once with the
row's protocol and once with ``test_phase_stops_at_failure`` (`reproduce --protocol-option
test_phase_stops_at_failure=true`), and prints the CPU time (`time.process_time`) of both and
the test sequences each drew. A test phase does not change the training, so where neither run
is solved on the way, both end with bit-identical weights (checked and printed): the time saved
is the test streams not run.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from lstmgraph.arrays import read_npz
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.trial import from_json_array


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment")
    parser.add_argument("checkpoint", nargs="?", type=Path, help="a trial's checkpoint.npz (its seed: the folder's name)")
    parser.add_argument("--seed", type=int, help="the trial (without a checkpoint)")
    parser.add_argument("--streams", type=int, default=200, help="training streams to run")
    args = parser.parse_args()
    experiment = find_experiment(args.experiment)
    plan = experiment.plan()
    saved = read_npz(args.checkpoint) if args.checkpoint else None
    seed = int(args.checkpoint.parent.name) if args.checkpoint else (args.seed or 0)
    done = int(saved["trial/counters"][0]) if saved else 0
    first_test = from_json_array(saved["trial/test_data"])["sequence"] if saved else 0
    experiment.trial(plan, seed, 10).run()  # the kernels loaded (or compiled) before the timing

    results = {}
    for stops in (False, True):
        protocol = replace(experiment.protocol, max_streams=done + args.streams, test_phase_stops_at_failure=stops)
        trial = replace(experiment, protocol=protocol).trial(plan, seed)
        if saved is not None:
            trial.restore(saved)
        start = time.process_time()
        trial.run()
        seconds = time.process_time() - start
        tested = trial.testing.first + int(trial.testing.counts[trial.testing.position]) - first_test
        results[stops] = (trial, seconds, tested)
    (plain, plain_seconds, _), (stopping, stopping_seconds, _) = results[False], results[True]
    print(f"{args.experiment}, trial {seed}: {args.streams:,} training streams after {done:,}")
    for label, (trial, seconds, tested) in (("every test stream", results[False]), ("stop at a failure", results[True])):
        row = trial.row
        print(f"  {label}: {seconds:8.2f} s CPU, {tested:,} test sequences drawn; solved {row['solved']}, "
              f"{row['presented']:,} training streams, {row['steps']:,} training steps, score {row['score']:.1f}")
    same = all(np.array_equal(plain.engine.weights[k], stopping.engine.weights[k]) for k in plain.engine.weights)
    print(f"  {plain_seconds / stopping_seconds:.2f} x faster; weights identical: {same}"
          + ("" if not (plain.row["solved"] or stopping.row["solved"]) else " (a run was solved: they part there)"))


if __name__ == "__main__":
    main()
