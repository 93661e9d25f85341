"""Why a logistic output unit misses the adding task's stop rule: the best code linear in X1 + X2.

The 1997 adding task's target is 0.5 + S/4 with S = X1 + X2 in [-2, 2], and a sequence is right
when |output - target| < 0.04. A net whose output unit sees a quantity linear in S (the natural
code: the cells store X1 + X2 and the output unit reads it) puts out sigma(a S + b). This script
finds the a, b that make the fewest sequences wrong and what that costs under the 1997 stop rule
("the 2,000 most recent sequences all right"):

    .venv/bin/python benchmarks/adding_linear_code.py [--samples 2000000]

The distribution of S is the task's (lstmgraph/tasks/adding.py): X1, X2 uniform in [-1, 1], except
that a value at the first position is 0 (first mark there with probability 1/10; second mark
there with probability 9/10 x 1/48, for T = 100). The fraction wrong is computed twice: by
integrating over that distribution on a fine grid, and by sampling the task itself (``--samples``
sequences, seed 0; 2 million give the figure in docs/results.md).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from lstmgraph.tasks import make_task

TOLERANCE = 0.04
WINDOW = 2000


def sigma(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def wrong(s: np.ndarray, a: float, b: float = 0.0) -> np.ndarray:
    """Where sigma(a S + b) misses the target 0.5 + S/4 by 0.04 or more."""
    return np.abs(sigma(a * s + b) - (0.5 + s / 4.0)) >= TOLERANCE


def density_grid(points: int = 200_001) -> tuple[np.ndarray, np.ndarray]:
    """S on a grid over [-2, 2] with the probability weight of each grid cell (midpoint rule)."""
    edges = np.linspace(-2.0, 2.0, points)
    s = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    p_zero = 1 / 10 + 9 / 10 / 48              # one of the two values is 0 (T = 100)
    triangle = (2.0 - np.abs(s)) / 4.0          # density of U[-1,1] + U[-1,1]
    uniform = np.where(np.abs(s) <= 1.0, 0.5, 0.0)
    return s, ((1 - p_zero) * triangle + p_zero * uniform) * width


def fraction_wrong(s: np.ndarray, weights: np.ndarray, a: float, b: float = 0.0) -> float:
    return float(np.sum(weights[wrong(s, a, b)]))


def task_sums(samples: int, seed: int = 0) -> np.ndarray:
    """S = 4 (target - 0.5) of ``samples`` sequences drawn from the task (T = 100)."""
    task = make_task("adding", {"length": 100})
    rng = np.random.default_rng(seed)
    return np.array([4.0 * (task.sample(rng).targets[-1, 0] - 0.5) for _ in range(samples)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=200_000, help="task sequences to sample (default 200,000)")
    args = parser.parse_args()

    s, weights = density_grid()
    # S and the target are symmetric about 0 and 0.5, so b = 0; a on a coarse grid, then a fine one
    coarse = min((fraction_wrong(s, weights, a), a) for a in np.arange(0.50, 3.0001, 0.01))[1]
    best, a = min((fraction_wrong(s, weights, a), a) for a in np.arange(coarse - 0.01, coarse + 0.01, 0.0005))
    b = 0.0
    shifted = min(fraction_wrong(s, weights, a, shift) for shift in (-0.05, -0.01, 0.01, 0.05))
    print(f"output sigma(a S + b), S = X1 + X2; a sequence is wrong when |output - (0.5 + S/4)| >= {TOLERANCE}")
    print(f"best code (a in [0.5, 3], step 0.01, then 0.0005; b = 0 by symmetry): a = {a:.4f}")
    print(f"  wrong (integrated over the task's distribution of S): {100 * best:.3f} %")
    print(f"  (with b = +-0.01 or +-0.05 instead of 0: at best {100 * shifted:.3f} % wrong)")
    misses = s[wrong(s, a, b) & (weights > 0)]
    inner = np.abs(misses).min()
    print(f"  wrong exactly where |S| > {inner:.3f}, i.e. targets below {0.5 - inner / 4:.3f} or above "
          f"{0.5 + inner / 4:.3f}: sigma({a:.4f} x 2) = {float(sigma(np.array(2 * a))):.4f} against 1")
    middle = np.abs(s) <= inner
    deviation = float(np.max(np.abs(sigma(a * s[middle]) - (0.5 + s[middle] / 4))))
    print(f"  largest miss where it is right: {deviation:.4f} (the tolerance is {TOLERANCE}): a larger a, or any b,")
    print("  breaks the middle range, a smaller one loses more of the ends")
    for other in (1.0, 1.2, 1.25, 1.3, 1.31, 1.35, 1.4, 2.0):
        print(f"  a = {other:.2f}: {100 * fraction_wrong(s, weights, other):.3f} % wrong, {WINDOW:,} in a row right "
              f"with chance {(1 - fraction_wrong(s, weights, other)) ** WINDOW:.2g}")
    sums = task_sums(args.samples)
    sampled = float(np.mean(wrong(sums, a, b)))
    print(f"  wrong on {args.samples:,} sequences sampled from the task (seed 0): {100 * sampled:.3f} %")
    chance = (1 - best) ** WINDOW
    print(f"chance that {WINDOW:,} sequences in a row are all right: (1 - {best:.5f})^{WINDOW} = {chance:.2g} "
          f"(exp(-{WINDOW} x {best:.5f}) = {math.exp(-WINDOW * best):.2g})")
    print(f"expected wrong among {WINDOW:,}: {WINDOW * best:.1f}")


if __name__ == "__main__":
    main()
