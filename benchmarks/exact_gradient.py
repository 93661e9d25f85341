"""The exact gradient two ways on a 1997 sequence task: exact RTRL online, BPTT over each sequence.

    .venv/bin/python benchmarks/exact_gradient.py hochreiter1997_temporal_order_6b --sequences 300

Where only a sequence's last step has a target (adding, multiplication, temporal order) and
there is no momentum, online RTRL changes the weights once a sequence, at its end, by the
gradient summed over it: BPTT's update. This trains one trial of the spec on the same
sequences with truncated RTRL (the papers'), exact RTRL, and BPTT with every connection
carrying (the interpreter's ``run_segment``), and prints each one's CPU time per step and the
largest weight difference of exact RTRL from BPTT and from truncated RTRL. Each runs on its
specialised kernel, as a long sweep does (`network.kernel_for`; the first use compiles it:
about 30 s, up to minutes for exact RTRL).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import lstmgraph
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.tasks import make_task

SPECS = Path(__file__).resolve().parent.parent / "specs"
RULES = {"truncated RTRL": dict(full_gradient=False, kernel="specialised"),
         "exact RTRL": dict(full_gradient=True, kernel="specialised"),
         "BPTT, every connection carrying": dict(full_gradient=True, segments=True, kernel="specialised")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a bundled spec's name (specs/NAME.yaml) with a sequence task")
    parser.add_argument("--sequences", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    plan = lstmgraph.compile_spec(SPECS / f"{args.spec}.yaml")
    training = plan.training
    task = make_task(training.task.name, training.task.options)
    rng = np.random.default_rng(args.seed)
    sequences = [task.sample(rng) for _ in range(args.sequences)]
    steps = sum(len(sequence.inputs) for sequence in sequences)
    weights = initial_weights(plan, [args.seed])
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


if __name__ == "__main__":
    main()
