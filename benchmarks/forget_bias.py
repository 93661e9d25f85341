"""How a 2002 stream row's outcome depends on the forget gate's initial bias.

    .venv/bin/python benchmarks/forget_bias.py gers2002-msd-f10-peephole --biases -2 -1 0 1 2 \
        --trials 10 --streams 1000000 --jobs 2

Runs trials 0..N-1 of EXPERIMENT (its net, task, protocol and seeds) with the forget gates'
bias weights initialised to each value in turn (seed 002 gives -2 for the 2002 nets; the
2000 nets start at +1 or +5), each trial capped at ``--streams`` training streams, and prints
a table of nets solved and the training streams they took. The test phases end at their first
failing stream (`reproduce --protocol-option test_phase_stops_at_failure=true`), which leaves
the training unchanged. docs/results.md reports the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from lstmgraph.experiments import Experiment, find_experiment
from lstmgraph.experiments.catalogue import forget_gate_bias


def biased_experiment(name: str, bias: float, streams: int) -> Experiment:
    """Row ``name`` with its forget-gate bias initialised to ``bias``, at most ``streams`` training streams."""
    experiment = find_experiment(name)
    protocol = replace(experiment.protocol, max_streams=streams, test_phase_stops_at_failure=True)
    return replace(experiment, protocol=protocol, variants=experiment.variants + (forget_gate_bias(bias),))


def _trial(name: str, bias: float, streams: int, seed: int) -> tuple[dict[str, Any], float]:
    experiment = biased_experiment(name, bias, streams)
    trial = experiment.trial(experiment.plan(), seed)
    start = time.process_time()
    row = trial.run()
    return row, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--biases", type=float, nargs="+", default=[-2.0, -1.0, 0.0, 1.0, 2.0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--streams", type=int, default=1_000_000, help="training streams per trial, at most")
    parser.add_argument("--jobs", type=int, default=2)
    arguments = parser.parse_args()
    try:
        if find_experiment(arguments.experiment).unit != "training streams":
            parser.error(f"{arguments.experiment} is not a stream row (the 2000 and 2002 continual tasks)")
    except KeyError as error:
        parser.error(error.args[0])
    print(f"{arguments.experiment}, trials 0-{arguments.trials - 1}, at most {arguments.streams:,} training streams "
          f"each, the forget gate's initial bias varied")
    print("| forget-gate bias | solved | mean training streams to success | range | CPU |")
    print("|---|---|---|---|---|")
    with ProcessPoolExecutor(arguments.jobs) as pool:
        for bias in arguments.biases:
            jobs = [pool.submit(_trial, arguments.experiment, bias, arguments.streams, seed)
                    for seed in range(arguments.trials)]
            results = [job.result() for job in jobs]
            done = sorted(row["to_success"] for row, _ in results if row["solved"])
            seconds = sum(cpu for _, cpu in results)
            figures = f"{statistics.mean(done):,.0f} | {done[0]:,}-{done[-1]:,}" if done else "- | -"
            print(f"| {bias:+g} | {len(done)}/{len(results)} | {figures} | {seconds:,.0f} s |", flush=True)


if __name__ == "__main__":
    main()
