"""CPU time per trial-step of one kernel, for comparisons on a shared machine.

Wall-clock figures (`lstmgraph bench`) move with whatever else runs; CPU time moves far less.
Run a kernel over N steps and over none, under `perf stat`, and take the difference:

    for r in 0 1; do perf stat -x, -e task-clock .venv/bin/python benchmarks/cpu_time.py \\
        gers2000_cerg specialised 1 200000 $r; done        # spec kernel width steps run
    # (second task-clock - first) / (width * steps) = CPU time per trial-step

``kernel``: ``specialised`` or ``interpreter``; ``width``: trials side by side in one block (the
specialised kernel: 1 or 4); ``--exact``: exact RTRL; ``--forward``: no learning. One thread, the kernel called directly.
"""

from __future__ import annotations

import argparse

import numpy as np

import lstmgraph
from lstmgraph.benchmark import stream
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork, specialised
from lstmgraph.files import BUNDLED_SPECS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a bundled spec's name, e.g. gers2000_cerg")
    parser.add_argument("kernel", choices=["specialised", "interpreter"])
    parser.add_argument("width", type=int)
    parser.add_argument("steps", type=int)
    parser.add_argument("run", type=int, choices=[0, 1], help="0: load and warm up only; 1: and run the steps")
    parser.add_argument("--exact", action="store_true", help="exact RTRL")
    parser.add_argument("--forward", action="store_true", help="forward pass and loss only (a test stream)")
    args = parser.parse_args()
    plan = lstmgraph.compile_spec(BUNDLED_SPECS / f"{args.spec}.yaml")
    network = CompiledNetwork(plan, full_gradient=args.exact, kernel="interpreter", threads=1)
    width = args.width
    run = specialised.load(network.flat, width).run if args.kernel == "specialised" else network.interpreter.run
    inputs, targets = stream(network.n_inputs, network.n_outputs, args.steps)
    block = network.population(initial_weights(plan, list(range(width))), 0.001, lanes=width).lanes[0].V
    lanes_in = np.ascontiguousarray(np.broadcast_to(inputs[:, :, None], inputs.shape + (width,)))
    lanes_out = np.ascontiguousarray(np.broadcast_to(targets[:, None, :, None], (len(targets), 1, targets.shape[1], width)))

    def call(steps: int) -> None:
        run(*network.flat.arguments(), block, lanes_in[:steps], lanes_out[:steps], np.full(width, 0.001), 0.0, 1.0,
            0.0, np.full(width, not args.forward), np.ones(width, dtype=np.bool_), np.zeros(width, dtype=np.int64),
            np.zeros(width), np.zeros((width, 0, network.n_outputs)), np.zeros(width, dtype=np.bool_), False)

    call(2)  # compile or load
    if args.run:
        call(args.steps)


if __name__ == "__main__":
    main()
