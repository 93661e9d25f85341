"""How often the verdicts' intervals cover the truth: the figures docs/results.md quotes.

    .venv/bin/python benchmarks/interval_coverage.py

The Wilson interval of a rate (`verdict.wilson`): its exact coverage at each true rate p is the
binomial probability of the counts whose interval holds p; this prints its worst case over a
fine grid of p for each trial count. The percentile bootstrap interval of a mean
(`verdict.bootstrap_mean`): its coverage is simulated on exponential values (skewed, as
training times are), seeded, for each number of solved trials.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from lstmgraph.experiments.verdict import bootstrap_mean, wilson


def wilson_coverage(trials: int, rates: np.ndarray) -> np.ndarray:
    """The exact coverage of the Wilson interval at each rate of ``rates`` with ``trials`` trials."""
    lows, highs = np.array([wilson(k, trials) for k in range(trials + 1)]).T
    counts = np.arange(trials + 1)
    chances = np.array([math.comb(trials, k) for k in counts], dtype=np.float64) \
        * rates[:, None] ** counts * (1 - rates[:, None]) ** (trials - counts)
    covers = (lows <= rates[:, None]) & (rates[:, None] <= highs)
    return (chances * covers).sum(axis=1)


def bootstrap_coverage(values: int, data_sets: int, resamples: int, seed: int) -> float:
    """The share of ``data_sets`` exponential samples of ``values`` values (mean 1) whose
    bootstrap interval holds the mean."""
    rng = np.random.default_rng(seed)
    held = 0
    for index in range(data_sets):
        low, high = bootstrap_mean(rng.exponential(1.0, values), resamples=resamples, seed=index)
        held += low <= 1.0 <= high
    return held / data_sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=200_000, help="rates in (0, 1) tried for the Wilson interval")
    parser.add_argument("--data-sets", type=int, default=10_000, help="simulated data sets per bootstrap figure")
    parser.add_argument("--resamples", type=int, default=2_000, help="bootstrap resamples of each data set")
    arguments = parser.parse_args()
    rates = (np.arange(arguments.grid) + 0.5) / arguments.grid
    print("Wilson interval, worst exact coverage over the rates:")
    for trials in (10, 30, 100):
        coverage = wilson_coverage(trials, rates)
        worst = int(np.argmin(coverage))
        print(f"  n = {trials:>3}: {100 * coverage[worst]:.1f} % at p = {rates[worst]:.4f}; "
              f"mean over the rates {100 * coverage.mean():.1f} %")
    print(f"percentile bootstrap of a mean, exponential values ({arguments.data_sets:,} data sets):")
    for values in (2, 3, 5, 10, 30):
        share = bootstrap_coverage(values, arguments.data_sets, arguments.resamples, seed=values)
        error = math.sqrt(share * (1 - share) / arguments.data_sets)
        print(f"  {values:>2} values: {100 * share:.1f} % (+- {100 * error:.1f})")


if __name__ == "__main__":
    main()
