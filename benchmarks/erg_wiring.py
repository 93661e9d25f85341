"""Which part of the 1997 ERG net's wiring makes it slow to learn here: an ablation.

    .venv/bin/python benchmarks/erg_wiring.py --trials 30 --max-sequences 100000 --jobs 2

Each variant changes specs/hochreiter1997_erg.yaml (3 blocks x 2 cells, 276 weights: outputs
see only the cell outputs and have no bias; cells and gates see the previous step's cell
outputs *and gate activations*) by one or more of the 2000 CERG net's choices: output biases,
input-to-output shortcut connections, only cell outputs as recurrent sources. Every variant
runs under the 1997 protocol of `hochreiter1997-erg-3x2-lr0.5` (trials k = 0..N-1: weights
from seed k, training/test set pair k mod 3), trained on the next symbol (the catalogue's
choice) or on the set of legal next symbols (``--targets legal``). docs/results.md reports
the figures.
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.catalogue import (CELL_SOURCES_ONLY, INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES, Experiment,
                                             Variant)

EXPERIMENT = "hochreiter1997-erg-3x2-lr0.5"
VARIANTS: dict[str, tuple[Variant, ...]] = {
    "paper": (),
    "output-biases": (OUTPUT_BIASES,),
    "shortcut": (INPUT_OUTPUT_SHORTCUT,),
    "shortcut+output-biases": (INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES),
    "cell-sources-only": (CELL_SOURCES_ONLY,),
    # = hochreiter1997-erg-3x2-lr0.5-2000-wiring with --targets legal
    "shortcut+output-biases+cell-sources-only": (INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES, CELL_SOURCES_ONLY),
}


def variant_experiment(name: str, targets: str) -> Experiment:
    return replace(find_experiment(EXPERIMENT), variants=VARIANTS[name], task_options={"targets": targets})


def _trial(name: str, targets: str, seed: int, max_sequences: int) -> dict[str, Any]:
    experiment = variant_experiment(name, targets)
    experiment = replace(experiment, protocol=replace(experiment.protocol, max_sequences=max_sequences))
    return experiment.trial(experiment.plan(), seed).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--targets", choices=["next", "legal"], default="next")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--max-sequences", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2)
    arguments = parser.parse_args()
    print(f"{EXPERIMENT} protocol, targets: {arguments.targets}, {arguments.trials} trials per variant, "
          f"at most {arguments.max_sequences:,} sequences")
    print("| variant | weights | solved | mean sequences to success | median | range |")
    print("|---|---|---|---|---|---|")
    with ProcessPoolExecutor(arguments.jobs) as pool:
        for name in arguments.variants:
            jobs = [pool.submit(_trial, name, arguments.targets, seed, arguments.max_sequences)
                    for seed in range(arguments.trials)]
            rows = [job.result() for job in jobs]
            done = sorted(row["to_success"] for row in rows if row["solved"])
            weights = variant_experiment(name, arguments.targets).plan().n_parameters
            figures = (f"{statistics.mean(done):,.0f} | {statistics.median(done):,.0f} | "
                       f"{done[0]:,}-{done[-1]:,}") if done else "- | - | -"
            print(f"| {name} | {weights} | {len(done)}/{len(rows)} | {figures} |", flush=True)


if __name__ == "__main__":
    main()
