"""The exact gradient two ways on a 1997 sequence task: exact RTRL online, BPTT over each sequence.

    .venv/bin/python benchmarks/exact_gradient.py hochreiter1997_temporal_order_6b --sequences 1000
    .venv/bin/python benchmarks/exact_gradient.py --experiment hochreiter1997-temporal-order-6b --seed 0 --pieces 15

Where only a sequence's last step has a target (adding, multiplication, temporal order) and
there is no momentum, online RTRL changes the weights once a sequence, at its end, by the
gradient summed over it: BPTT's update. With a spec, this trains one trial on the same
sequences with truncated RTRL (the papers'), exact RTRL, and BPTT with every connection
carrying, and prints each one's CPU time per step and the largest weight difference of exact
RTRL from BPTT and from truncated RTRL. Each runs on its specialised kernel, as a long sweep
does (`network.kernel_for`; the first use compiles it: about 30 s, up to minutes for exact RTRL).

With ``--experiment``, trial ``--seed`` of that catalogue row learns by exact RTRL and by BPTT
(every connection carrying) side by side, in pieces of 10^6 steps; after each piece it prints
the steps, the largest weight difference and each one's window of recent sequences (wrong, mse).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import lstmgraph
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.sweep_keys import KEYS
from lstmgraph.tasks import make_task

SPECS = Path(__file__).resolve().parent.parent / "specs"
RULES = {"truncated RTRL": dict(full_gradient=False, kernel="specialised"),
         "exact RTRL": dict(full_gradient=True, kernel="specialised"),
         "BPTT, every connection carrying": dict(full_gradient=True, segments=True, kernel="specialised")}
PIECE = 1_000_000


def per_step(spec: str, count: int, seed: int) -> None:
    plan = lstmgraph.compile_spec(SPECS / f"{spec}.yaml")
    training = plan.training
    task = make_task(training.task.name, training.task.options)
    rng = np.random.default_rng(seed)
    sequences = [task.sample(rng) for _ in range(count)]
    steps = sum(len(sequence.inputs) for sequence in sequences)
    weights = initial_weights(plan, [seed])
    learned = {}
    for label, options in RULES.items():
        network = CompiledNetwork(plan, loss=training.loss, **options)
        warm = network.population(weights, training.learning_rate)  # compiles, if need be
        warm.run(sequences[0].inputs, sequences[0].targets)
        population = network.population(weights, training.learning_rate)
        start = time.process_time()
        for sequence in sequences:
            population.reset()
            population.run(sequence.inputs, sequence.targets)
        seconds = time.process_time() - start
        learned[label] = population.weights()
        print(f"{label:32s} {seconds / steps * 1e6:6.2f} us a step ({steps:,} steps, {len(sequences):,} sequences)")
    exact = learned["exact RTRL"]
    for label in ("BPTT, every connection carrying", "truncated RTRL"):
        apart = max(float(np.abs(exact[name] - values).max()) for name, values in learned[label].items())
        print(f"exact RTRL's weights from {label}'s: {apart:.2e} at most")


def side_by_side(name: str, seed: int, pieces: int) -> None:
    row = find_experiment(name)
    rules = {"exact RTRL": KEYS["learning_rule"].apply(row, "learning_rule", "rtrl"),
             "BPTT": KEYS["variant.NAME"].apply(KEYS["learning_rule"].apply(row, "learning_rule", "bptt"),
                                                "full_gradient", True)}
    trials = {label: experiment.trial(experiment.plan(), seed, None, "specialised")
              for label, experiment in rules.items()}
    print("steps (each)  weights apart  " + "  ".join(f"{label}: wrong, mse" for label in trials))
    for _ in range(pieces):
        reports = [trial.advance(PIECE).figures for trial in trials.values()]
        exact, bptt = (trial.engine.weights for trial in trials.values())
        apart = max(float(np.abs(exact[key] - values).max()) for key, values in bptt.items())
        windows = "  ".join(f"{report['recent_wrong']:5d}, {report['recent_mse']:.6f}" for report in reports)
        print(f"{trials['BPTT'].steps_trained():12,d}  {apart:13.3e}  {windows}", flush=True)
        if any(trial.done for trial in trials.values()):
            break


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", help="a bundled spec's name (specs/NAME.yaml) with a sequence task")
    parser.add_argument("--sequences", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--experiment", help="a 1997 sequence row: its trial learns both ways side by side")
    parser.add_argument("--pieces", type=int, default=15)
    args = parser.parse_args()
    if args.experiment:
        side_by_side(args.experiment, args.seed, args.pieces)
    elif args.spec:
        per_step(args.spec, args.sequences, args.seed)
    else:
        parser.error("give a spec or --experiment")


if __name__ == "__main__":
    main()
