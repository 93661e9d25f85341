"""Online truncated-RTRL speed of any spec: numpy reference executor against the compiled one.

    .venv/bin/python benchmarks/steps_per_second.py specs/gers2000_cerg.yaml --steps 200000 --trials 1 10 100

`lstmgraph bench` measures the fixed set of docs/performance.md; this script measures the spec
you name. The first run of an installation compiles the interpreter (cached; not timed).
"""

from __future__ import annotations

import argparse

import lstmgraph
from lstmgraph.benchmark import numpy_steps_per_second, trial_steps_per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--numpy-steps", type=int, default=5_000)
    parser.add_argument("--trials", type=int, nargs="+", default=[1, 10, 100])
    arguments = parser.parse_args()
    plan = lstmgraph.compile_spec(arguments.spec)
    print(f"{plan.name}: {plan.n_parameters} weights, online truncated RTRL, float64")
    print(f"  numpy engine, 1 trial: {numpy_steps_per_second(plan, arguments.numpy_steps):,.0f} steps/s")
    for trials in arguments.trials:
        rate = trial_steps_per_second(plan, max(arguments.steps // trials, 100), trials)
        print(f"  compiled executor, {trials} trial(s): {rate:,.0f} trial-steps/s")


if __name__ == "__main__":
    main()
